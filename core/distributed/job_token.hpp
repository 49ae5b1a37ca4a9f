#pragma once
// The job token: a secret every process of a job holds, so that nothing else can join the
// job or read its keys through its store (c10d's TCP store has no access control of its
// own). Every key of the job lives under a name derived from the token, which a process
// without it cannot guess (the store cannot list its keys), and the store publishes a
// salted SHA-256 of the token, so that a process with another token, or none, is refused
// at once, in one sentence, instead of waiting out the rendezvous.
//
// plait's launcher makes a random token for a job on one node and hands it to its ranks;
// the launchers of several nodes, and ranks started by torchrun or Slurm, take it from
// PLAIT_JOB_TOKEN, or from the file PLAIT_JOB_TOKEN_FILE names (which others may neither
// read nor write, as ssh refuses a key file).
#include <string>

namespace plait {

// 32 hex digits from the system's random source.
std::string new_job_token();
// PLAIT_JOB_TOKEN, or PLAIT_JOB_TOKEN_FILE's first line; empty when neither is set.
std::string job_token_from_env();

// What the store publishes: a random salt and SHA-256(salt || token), in hex; "none"
// as the digest for a job without a token.
struct TokenCheck {
  std::string salt, digest;
};
TokenCheck make_token_check(const std::string& token);
bool token_matches(const TokenCheck& check, const std::string& token);

// The part of the job's key names that comes from the token ("" for none).
std::string token_key_space(const std::string& token);

}  // namespace plait
