#include "distributed/job_token.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include <openssl/evp.h>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string out;
  char buf[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", bytes[i]);
    out += buf;
  }
  return out;
}

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PLAIT_CHECK(EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) == 1,
              "cannot compute SHA-256 (OpenSSL)", "check the OpenSSL installation");
  return hex(digest, length);
}

std::string random_hex(int bytes) {
  std::random_device source;  // the kernel's random source
  std::string out;
  for (int i = 0; i < bytes; i += 4) {
    const unsigned v = source();
    const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
    out += hex(b, 4);
  }
  return out.substr(0, static_cast<std::size_t>(bytes) * 2);
}

}  // namespace

std::string new_job_token() { return random_hex(16); }

std::string job_token_from_env() {
  if (const char* token = std::getenv("PLAIT_JOB_TOKEN"); token != nullptr && *token != '\0') return token;
  const char* file = std::getenv("PLAIT_JOB_TOKEN_FILE");
  if (file == nullptr || *file == '\0') return "";
  struct stat st {};
  PLAIT_CHECK(::stat(file, &st) == 0, concat("PLAIT_JOB_TOKEN_FILE=", file, ": no such file"),
              "write the job's token into it (e.g. openssl rand -hex 16 > FILE; chmod 600 FILE)");
  char mode[8];
  PLAIT_CHECK(S_ISREG(st.st_mode), concat("PLAIT_JOB_TOKEN_FILE=", file, ": ", S_ISDIR(st.st_mode) ? "a folder" : "not a regular file",
                                         ", not the job's token file"),
              "point it at a file (mode 600) whose first line is the job's token");
  std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
  PLAIT_CHECK((st.st_mode & (S_IRWXG | S_IRWXO)) == 0,
              concat("PLAIT_JOB_TOKEN_FILE=", file, " can be read or written by others (mode ", mode,
                     "): a job token must be secret"),
              concat("chmod 600 ", file));
  std::ifstream in(file);
  std::string token;
  std::getline(in, token);
  PLAIT_CHECK(!token.empty(), concat("PLAIT_JOB_TOKEN_FILE=", file, " is empty"), "write the job's token into its first line");
  return token;
}

TokenCheck make_token_check(const std::string& token) {
  if (token.empty()) return {"", "none"};
  const std::string salt = random_hex(16);
  return {salt, sha256_hex(salt + token)};
}

bool token_matches(const TokenCheck& check, const std::string& token) {
  if (check.digest == "none") return token.empty();
  return !token.empty() && sha256_hex(check.salt + token) == check.digest;
}

std::string token_key_space(const std::string& token) {
  return token.empty() ? "" : sha256_hex("plait key space:" + token).substr(0, 32);
}

}  // namespace plait
