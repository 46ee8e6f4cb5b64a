#include "argus/workspace/hash.h"

#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

#include "argus/workspace/ids.h"

namespace argus::workspace {

std::string ContentHash::hex() const {
  return fmt::format("{:016x}{:016x}", high, low);
}

Result<ContentHash> ContentHash::fromHex(std::string_view text) {
  auto bad = [&] {
    return fail("workspace", fmt::format("`{}` is not a content hash (32 hex digits)", text));
  };
  if (text.size() != 32) return bad();
  ContentHash hash;
  const char* begin = text.data();
  for (std::uint64_t* part : {&hash.high, &hash.low}) {
    auto [end, ec] = std::from_chars(begin, begin + 16, *part, 16);
    if (ec != std::errc{} || end != begin + 16) return bad();
    begin += 16;
  }
  return hash;
}

ContentHash hashBytes(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return ContentHash{h.high64, h.low64};
}

std::string canonicalJson(const nlohmann::json& value) {
  // nlohmann::json keeps objects in a std::map, so dump() sorts keys.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::string> canonicalJson(std::string_view text) {
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded())
    return fail("workspace", fmt::format("descriptor is not valid JSON: `{}`",
                                         text.size() > 80 ? std::string(text.substr(0, 80)) + "..."
                                                          : std::string(text)));
  return canonicalJson(parsed);
}

namespace {

void appendField(std::string& out, std::string_view field) {
  std::uint64_t size = field.size();
  char prefix[sizeof size];
  std::memcpy(prefix, &size, sizeof size);
  out.append(prefix, sizeof prefix);
  out.append(field);
}

}  // namespace

ContentHash memoKey(std::string_view taskType, const nlohmann::json& descriptor,
                    std::span<const ContentHash> inputHashes) {
  // Length-prefixed fields so that no two different (type, descriptor, inputs) serialize alike.
  std::string text = "argus.memo/1";
  appendField(text, taskType);
  appendField(text, canonicalJson(descriptor));
  appendField(text, std::to_string(inputHashes.size()));
  for (const auto& input : inputHashes) appendField(text, input.hex());
  return hashBytes(text);
}

Result<ContentHash> memoKey(std::string_view taskType, std::string_view descriptorJson,
                            std::span<const ContentHash> inputHashes) {
  auto parsed = nlohmann::json::parse(descriptorJson, nullptr, false);
  if (parsed.is_discarded())
    return fail("workspace", fmt::format("task descriptor is not valid JSON: `{}`",
                                         descriptorJson.substr(0, 80)));
  return memoKey(taskType, parsed, inputHashes);
}

Result<ObjectRef> parseObjectRef(std::string_view text) {
  ObjectRef ref;
  std::string_view digits = text;
  if (!text.empty()) {
    switch (text.front()) {
      case 'v':
      case 'V':
        ref.kind = ObjectKind::version;
        break;
      case 'a':
      case 'A':
        ref.kind = ObjectKind::artifact;
        break;
      case 't':
      case 'T':
        ref.kind = ObjectKind::task;
        break;
      case 'r':
      case 'R':
        ref.kind = ObjectKind::run;
        break;
      default:
        break;
    }
    if (ref.kind != ObjectKind::any) digits.remove_prefix(1);
  }
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ref.value);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || ref.value <= 0)
    return fail("workspace",
                fmt::format("`{}` is not a workspace id; use v12 (version), a34 (artifact), t56 "
                            "(task), r7 (run) or a bare number",
                            text));
  return ref;
}

}  // namespace argus::workspace
