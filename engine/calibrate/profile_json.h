// Reading and writing a calibration profile's JSON, shared by measuring (measure.cc), merging
// (merge.cc) and comparing (compare.cc). Internal to engine/calibrate.
//
// A profile may be written by hand: every reader here throws nlohmann::json::exception on a value
// of the wrong shape, and the public functions of calibrate.h turn that into InvalidArgument
// (NotAProfile). Nothing else may let such an exception out of the module.
#ifndef RESMEM_ENGINE_CALIBRATE_PROFILE_JSON_H_
#define RESMEM_ENGINE_CALIBRATE_PROFILE_JSON_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem::calibrate {

using nlohmann::json;

// A whole number a profile gives for KEY, as T. nlohmann's value<T>() converts any number with a
// plain cast: a float out of T's range (1.6e68 as uint64_t) is undefined behaviour and a negative
// one wraps (found by the calibration fuzz target's long run, corpus regress-float-size). Here a
// float must be whole and in range, an integer in range; else json::out_of_range.
template <typename T>
T WholeNumber(const json& v, const char* key) {
  constexpr int kDigits = std::numeric_limits<T>::digits;
  const double lo = std::numeric_limits<T>::is_signed ? -std::ldexp(1.0, kDigits) : 0.0;
  const double hi = std::ldexp(1.0, kDigits);  // exclusive
  auto refuse = [&](const std::string& value) {
    return json::out_of_range::create(
        406, std::string(key) + " is " + value + ", not a whole number that fits " +
                 (std::numeric_limits<T>::is_signed ? "a signed " : "an unsigned ") +
                 std::to_string(kDigits + (std::numeric_limits<T>::is_signed ? 1 : 0)) + "-bit integer",
        &v);
  };
  if (!v.is_number()) throw json::type_error::create(302, std::string(key) + " must be a number", &v);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < lo || d >= hi) throw refuse(v.dump());
    return static_cast<T>(d);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw refuse(v.dump());
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < 0 ? !std::numeric_limits<T>::is_signed || i < static_cast<int64_t>(std::numeric_limits<T>::min())
            : static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
    throw refuse(v.dump());
  return static_cast<T>(i);
}

// j[KEY] as WholeNumber<T>, or FALLBACK when j is an object without KEY (json::value's contract).
template <typename T>
T WholeOr(const json& j, const char* key, T fallback) {
  if (!j.is_object()) throw json::type_error::create(306, std::string("cannot read ") + key + " from a non-object", &j);
  const auto it = j.find(key);
  return it == j.end() ? fallback : WholeNumber<T>(*it, key);
}

// j[key] for a const j that may be no object or may lack the key: then null (iterates as empty;
// .value() and .get() on it throw json::type_error). nlohmann's const operator[] only asserts
// that the key exists: undefined behaviour in a release build on a profile written by hand
// (found by the calibration fuzz target, engine/calibrate/calibration_fuzz.cc).
const json& Field(const json& j, const char* key);

// A mapping's facts as a profile case records them, and back (`length` is the case's size).
json FactsToJson(const MappingFacts& f);
MappingFacts FactsFromJson(const json& j, uint64_t length);

// The codes a case or sequence call returned in each run ("code_runs"), or its one "code".
std::vector<int> CodesOf(const json& entry);
// A bandwidth class's rate in each run ("run_gbps"), or its one "gbps".
std::vector<double> RunGbpsOf(const json& entry);
// "pinned H2D 16 MiB": a bandwidth class's name in merges and messages.
std::string BandwidthKey(const json& b);

// "12.5%", "8.13 GB/s"
std::string Percent(double fraction);
std::string GbpsText(double gbps);

// The InvalidArgument a profile of the wrong shape gets (a string where a number belongs, an
// entry that is no object): `what` names the input.
Status NotAProfile(const std::string& what, const json::exception& e);

}  // namespace resmem::calibrate

#endif  // RESMEM_ENGINE_CALIBRATE_PROFILE_JSON_H_
