// Path-aware codecs of the metadata types, for the types that embed them.
#ifndef WAVEPOOL_API_SRC_OBJECT_META_CODEC_H_
#define WAVEPOOL_API_SRC_OBJECT_META_CODEC_H_

#include "nlohmann/json.hpp"
#include "wavepool/api/field_path.h"
#include "wavepool/api/object_meta.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, OwnerReference* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, ObjectMeta* out);
absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path, Condition* out);

inline nlohmann::json EncodeValue(const OwnerReference& value) { return ToJson(value); }
inline nlohmann::json EncodeValue(const ObjectMeta& value) { return ToJson(value); }
inline nlohmann::json EncodeValue(const Condition& value) { return ToJson(value); }

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_SRC_OBJECT_META_CODEC_H_
