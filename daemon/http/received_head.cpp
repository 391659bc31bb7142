#include "http/received_head.hpp"

#include <cstdint>
#include <cstring>

#include "http/head_layout.hpp"

namespace p2pnode::http {
namespace {

// The fields with their lengths as stored: a value ends at its first NUL (head_layout.hpp).
struct FieldsRead {
  std::vector<HeadField> fields;
  std::vector<HeadLayout::Field> places;
  std::uintptr_t head = 0;  // the method's address: offsets count from it
};

std::size_t offset_in_head(std::uintptr_t head, const char* p) {
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(p) - head);  // before the head: huge
}

MHD_Result read_field(void* cls, MHD_ValueKind, const char* key, std::size_t key_size, const char* value,
                      std::size_t value_size) {
  auto* read = static_cast<FieldsRead*>(cls);
  if (!key) { return MHD_YES; }
  if (!value) {
    value = key + key_size;  // no value: an empty one where the name ends
  }
  read->fields.push_back({std::string_view(key, key_size), std::string_view(value, value_size)});
  read->places.push_back({offset_in_head(read->head, key), key_size, offset_in_head(read->head, value), value_size});
  return MHD_YES;
}

#if MHD_VERSION < 0x01000000
// libmicrohttpd 0.9 hides a NUL inside a line and mangles an obs-fold line; 1.0 refuses both.
std::optional<Refusal> refuse_layout(MHD_Connection* c, const FieldsRead& read, const char* method, const char* version,
                                     const TargetSeen& target) {
  const auto* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
  if (!info || !target.at || !version) { return std::nullopt; }
  HeadLayout l;
  l.size = info->header_size;
  l.method_size = std::strlen(method);
  l.target_at = offset_in_head(read.head, target.at);
  l.target_size = target.text.size();
  l.version_at = offset_in_head(read.head, version);
  l.version_size = std::strlen(version);
  l.fields = read.places;
  return refuse_hidden_bytes(l);
}
#else
std::optional<Refusal> refuse_layout(MHD_Connection*, const FieldsRead&, const char*, const char*, const TargetSeen&) {
  return std::nullopt;
}
#endif

}  // namespace

std::optional<Refusal> refuse_received_head(MHD_Connection* c, const char* method, const char* version,
                                            const TargetSeen& target) {
  if (!method) { return Refusal{400, "the request line has no method"}; }
  FieldsRead read;
  read.head = reinterpret_cast<std::uintptr_t>(method);
  MHD_get_connection_values_n(c, MHD_HEADER_KIND, &read_field, &read);
  if (auto r = refuse_layout(c, read, method, version, target)) { return r; }
  RequestHead head{method, target.text, version ? version : "", std::move(read.fields)};
  return refuse_head(head);
}

}  // namespace p2pnode::http
