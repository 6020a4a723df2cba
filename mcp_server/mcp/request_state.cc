#include "mcp/request_state.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <array>
#include <stdexcept>

#include "common/base64.h"
#include "common/hex.h"

namespace mcp {
namespace {

using nlohmann::json;

std::string randomKey() {
  std::string key(32, '\0');
  std::size_t filled = 0;
  while (filled < key.size()) {
    const ssize_t n = getrandom(key.data() + filled, key.size() - filled, 0);
    if (n < 0) throw std::runtime_error("getrandom failed; the kernel CSPRNG is unavailable");
    filled += static_cast<std::size_t>(n);
  }
  return key;
}

std::int64_t secondsOf(RequestStateSeal::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

RequestStateSeal::RequestStateSeal() : key_(randomKey()) {}

std::string RequestStateSeal::mac(std::string_view data) const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data(), &length);
  return common::hexEncode(digest.data(), length);
}

std::string RequestStateSeal::seal(const json& state, std::string_view owner,
                                   std::string_view purpose, std::chrono::seconds ttl,
                                   Clock::time_point now) const {
  const json payload{
      {"owner", owner}, {"purpose", purpose}, {"expires", secondsOf(now + ttl)}, {"state", state}};
  std::string data = common::base64Encode(payload.dump());
  std::string sealed = data + "." + mac(data);
  return sealed;
}

std::optional<json> RequestStateSeal::open(std::string_view sealed, std::string_view owner,
                                           std::string_view purpose, Clock::time_point now) const {
  const std::size_t dot = sealed.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view data = sealed.substr(0, dot);
  const std::string_view given = sealed.substr(dot + 1);
  const std::string expected = mac(data);
  if (given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return std::nullopt;
  }
  const auto text = common::base64Decode(data);
  if (!text) return std::nullopt;
  const json payload = json::parse(*text, nullptr, false);
  if (!payload.is_object() || payload.value("owner", "") != owner ||
      payload.value("purpose", "") != purpose) {
    return std::nullopt;
  }
  const json expires = payload.value("expires", json());
  if (!expires.is_number_integer() || expires.get<std::int64_t>() < secondsOf(now)) {
    return std::nullopt;
  }
  return payload.value("state", json());
}

}  // namespace mcp
