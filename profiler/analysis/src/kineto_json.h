// Reads a Kineto document without building a tree of it: the `traceEvents` array in windows of
// about a MiB, each parsed by simdjson's DOM parser (which checks all of it) and handed on event
// by event, so that memory holds the text and one window's parse (docs/kineto.md, "How it is
// read").
//
// A window runs from one event to the comma after another, with '[' written over the byte before
// its first event and ']' over that comma (both put back afterwards). Where it ends: Kineto's
// separator between events ("},\n": a line break is never inside a string) past the window's
// size, when the parse confirms it (a window that parses whole ends between events); else where
// simdjson's On-Demand parser, skimming a window cut anywhere, finds the last element the cut left
// whole. A skimmed window without one doubles, up to the document's end, where a failure is the
// document's own. A cut inside a string (the parser's first stage says so) moves past the
// string's closing quote. The header and the fields after the array are read with On-Demand.
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
