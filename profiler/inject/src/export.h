// Marks the library's entry points: the only symbols exports.map lets out of libpipescope.so.
#pragma once

#define PIPESCOPE_EXPORT extern "C" __attribute__((visibility("default")))
