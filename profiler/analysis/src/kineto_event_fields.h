// One Kineto trace event's fields, read from the object simdjson's DOM parser built for it (the
// parser has checked the whole window by then: a field is either there with a usable value or
// absent). Internal to the Kineto reader (kineto_json.cpp).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <vector>

#include "kineto_event.h"
#include "kineto_json.h"

namespace pipescope::analysis::kineto {

// `ranks` holds the "Process Group Ranks" the event's args point to, until the next event.
void read_event(simdjson::dom::object object, Event& event, std::vector<int32_t>& ranks,
                const DocumentHandler& handler);

// "[0, 1, 2, 3]" as ranks into `ranks`; empty when the list is cut short ("...") or odd.
void ranks_of_text(std::string_view text, std::vector<int32_t>& ranks);

}  // namespace pipescope::analysis::kineto
