#include "dist/rendezvous.hpp"

#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr const char* kJobKey = "plait/job";  // the one key outside every job's prefix

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

std::unique_ptr<JobStore> JobStore::host(int port, const std::string& job_id, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = timeout;
  std::unique_ptr<JobStore> s(new JobStore());
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>("0.0.0.0", options);
    s->port_ = tcp->getPort();
    s->store_ = std::move(tcp);
  } catch (const std::exception& e) {
    throw Error(concat("cannot host the rendezvous store on port ", port, ": ", e.what()),
                "the port may be taken; choose another with --master-port");
  }
  s->store_->set(kJobKey, bytes_of(job_id));
  s->job_id_ = job_id;
  s->prefix_ = "plait/" + job_id + "/";
  return s;
}

std::unique_ptr<JobStore> JobStore::connect(const std::string& addr, int port, const std::string& job_id,
                                            std::chrono::milliseconds timeout, const std::string& who) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = timeout;
  std::unique_ptr<JobStore> s(new JobStore());
  try {
    s->store_ = c10::make_intrusive<c10d::TCPStore>(addr, options);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    throw Error(concat(who, " could not reach the rendezvous store at ", addr, ":", port, " within ",
                       timeout.count() / 1000.0, " s (waiting for: a TCP connection to the store): ", why),
                "check MASTER_ADDR/MASTER_PORT (--master-addr/--master-port) and that rank 0 or the launcher "
                "of node 0 is running");
  }
  s->port_ = port;
  s->job_id_ = job_id;
  if (job_id.empty()) {
    try {
      s->store_->wait({kJobKey}, timeout);
    } catch (const std::exception&) {
      throw Error(concat(who, " reached the store at ", addr, ":", port, " but no job id was published there within ",
                         timeout.count() / 1000.0, " s"),
                  "is a plait launcher hosting that store?");
    }
    s->job_id_ = string_of(s->store_->get(kJobKey));
  }
  s->prefix_ = "plait/" + s->job_id_ + "/";
  return s;
}

JobStore::~JobStore() = default;

void JobStore::set(const std::string& key, const std::string& value) { store_->set(prefix_ + key, bytes_of(value)); }

std::optional<std::string> JobStore::try_get(const std::string& key) {
  if (!store_->check({prefix_ + key})) return std::nullopt;
  return string_of(store_->get(prefix_ + key));
}

std::string JobStore::wait_get(const std::string& key, std::chrono::milliseconds timeout,
                               const std::string& waiting_for) {
  try {
    store_->wait({prefix_ + key}, timeout);
  } catch (const std::exception& e) {
    throw Error(concat("waited ", timeout.count() / 1000.0, " s for ", waiting_for, " in vain"),
                "another rank failed or never started: see the launcher output and the rank logs");
  }
  return string_of(store_->get(prefix_ + key));
}

int64_t JobStore::add(const std::string& key, int64_t amount) { return store_->add(prefix_ + key, amount); }

void join_all_ranks(JobStore& store, int rank, int world_size, std::chrono::milliseconds timeout) {
  store.set(concat("joined/", rank), "1");
  if (store.add("joined-count", 1) == world_size) store.set("all-joined", "1");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!store.try_get("all-joined")) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (int r = 0; r < world_size; ++r) {
        if (!store.try_get(concat("joined/", r))) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      throw Error(concat("rank ", rank, " waited ", timeout.count() / 1000.0,
                         " s for every rank to join; still missing: ranks ", missing),
                  "start the missing ranks, or check that WORLD_SIZE matches the number started");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void StoreAbortChannel::post(const std::string& reason) {
  if (!store_.try_get("abort")) store_.set("abort", reason);
}

std::optional<std::string> StoreAbortChannel::poll() { return store_.try_get("abort"); }

std::vector<std::string> StoreAbortChannel::pending_operations() {
  std::vector<std::string> out;
  for (int r = 0; r < world_size_; ++r) {
    if (auto p = store_.try_get(concat("pending/", r)); p && !p->empty()) out.push_back(concat("rank ", r, ": ", *p));
  }
  return out;
}

}  // namespace plait
