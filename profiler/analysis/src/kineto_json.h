// Reads a Kineto document without building a tree: simdjson's On-Demand parser over windows of
// a MiB of the `traceEvents` array, so that the parser's index of a window, not of the whole
// document, is what memory holds beside the text (docs/kineto.md, "How it is read").
//
// A window is the text from one event to a cut, with '[' written over the byte before its first
// event and ']' over the byte at the cut (both put back afterwards). An event is handed on only
// once its closing brace has been read, so an event the cut splits fails to parse and the next
// window starts at it; a window that makes no progress doubles until it reaches the end of the
// document, where a failure is the document's own. A cut inside a string (the parser's first
// stage says so) moves past the string's closing quote.
#pragma once

#include <string>

#include "kineto_event.h"
#include "kineto_text.h"
#include "pipescope/common/expected.h"

namespace pipescope::analysis::kineto {

class DocumentHandler {
 public:
  virtual ~DocumentHandler() = default;
  // Once, before any event: the document's distributedInfo (empty when it has none). An error
  // ends the reading and is what the reader returns.
  virtual Status on_distributed_info(const DistributedInfo& info) = 0;
  virtual void on_event(const Event& event) = 0;
  // Whether an event's "args" are worth reading, given the fields that precede them (Kineto
  // writes "ph", "cat" and "name" first); skipped args stay empty. Most events' are not read.
  virtual bool wants_args(const Event& event) const {
    (void)event;
    return true;
  }
};

struct ReaderOptions {
  size_t window_bytes = size_t{1} << 20;  // of the events array per parse; grows for an event larger
};

// The document's distributedInfo, then each object in its `traceEvents` array, in order
// (non-objects are skipped). The text is changed while it is read and its pages are given back
// as the reader passes them: read it once. `origin` names the document in errors.
Status read_document(DocumentText& text, const std::string& origin, DocumentHandler& handler,
                     const ReaderOptions& options = {});

}  // namespace pipescope::analysis::kineto
