#include "distributed/rendezvous.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <thread>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "distributed/job_token.hpp"
#include "distributed/node_heartbeat.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr const char* kJobKey = "plait/job";  // the keys outside every job's prefix
constexpr const char* kTokenCheckKey = "plait/token-check";

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

// Waits until something accepts TCP connections at addr:port, retrying until the
// deadline. Returns "" when it does, else the last reason it did not. (c10d's client
// retries past its timeout and logs every try; this keeps the wait to the deadline.)
std::string wait_for_listener(const std::string& addr, int port, std::chrono::steady_clock::time_point deadline) {
  std::string why = "no attempt made";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      why = concat("cannot resolve ", addr, ": ", gai_strerror(rc));
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
        if (err == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
          err = ETIMEDOUT;
          if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(left.count(), 1000)))) == 1) {
            socklen_t len = sizeof(err);
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
        ::close(fd);
        if (err == 0) {
          ::freeaddrinfo(found);
          return "";
        }
        why = std::strerror(err);
      }
      ::freeaddrinfo(found);
    }
    if (std::chrono::steady_clock::now() >= deadline) return why;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void publish_token_check(c10d::Store& store, const std::string& token) {
  const TokenCheck check = make_token_check(token);
  store.set(kTokenCheckKey, bytes_of(nlohmann::json{{"salt", check.salt}, {"sha256", check.digest}}.dump()));
}

// Refuses a process whose token is not the job's, in one sentence, before it touches a key.
void check_token(c10d::Store& store, const std::string& token, const std::string& where, const std::string& who,
                 std::chrono::milliseconds timeout) {
  try {
    store.wait({kTokenCheckKey}, timeout);
  } catch (const std::exception&) {
    throw Error(concat(who, " reached the store at ", where, " but it published no job token check within ",
                       timeout.count() / 1000.0, " s"),
                "is a plait job hosting that store? Its launcher (or rank 0) publishes it first");
  }
  const nlohmann::json j = nlohmann::json::parse(string_of(store.get(kTokenCheckKey)));
  const TokenCheck check{j.at("salt").get<std::string>(), j.at("sha256").get<std::string>()};
  if (token_matches(check, token)) return;
  const std::string how = "set PLAIT_JOB_TOKEN (or PLAIT_JOB_TOKEN_FILE) to the job's token on every node";
  if (check.digest == "none") {
    throw Error(concat(who, " was given a job token, but the job at ", where, " has none: it cannot join"),
                "give every process of a job the same token, or none");
  }
  if (token.empty()) {
    throw Error(concat(who, " has no job token, but the job at ", where, " requires one: it cannot join"), how);
  }
  throw Error(concat(who, "'s job token is not the job's at ", where, ": it cannot join"), how);
}

}  // namespace

// Shared by every view of one connection.
struct JobStore::Link {
  std::string where;  // "addr:port"
  std::chrono::milliseconds reply_timeout{0};
  std::atomic<bool> lost{false};
};

bool JobStore::lost() const { return link_ && link_->lost.load(); }

Error JobStore::lost_error() const {
  return Error(concat("the job's store at ", link_->where, " stopped answering (no reply within ",
                      link_->reply_timeout.count() / 1000.0, " s): node 0 is down, or the network to it is cut"),
               "check that node 0's launcher still runs and that this node reaches it (its address and port)");
}

std::optional<std::string> JobStore::lost_reason() const {
  if (!lost()) return std::nullopt;
  return std::string(lost_error().what());
}

template <class Fn>
auto JobStore::guarded(Fn fn, std::chrono::milliseconds wait) -> decltype(fn()) {
  using Result = decltype(fn());
  if (lost()) throw lost_error();
  if (!link_) return fn();
  try {
    // c10d's client waits for a reply without a limit (a cut link leaves it in recv for
    // good): the request runs on a thread of its own, given up on after the reply timeout,
    // and `fn` owns what it uses, since the thread may outlive this call.
    auto result = std::make_shared<std::promise<Result>>();
    std::future<Result> reply = result->get_future();
    std::thread([result, fn]() mutable {
      try {
        if constexpr (std::is_void_v<Result>) {
          fn();
          result->set_value();
        } else {
          result->set_value(fn());
        }
      } catch (...) {
        result->set_exception(std::current_exception());
      }
    }).detach();
    if (reply.wait_for(link_->reply_timeout + wait) == std::future_status::timeout) {
      link_->lost = true;
      throw lost_error();
    }
    return reply.get();
  } catch (const c10::DistNetworkError&) {
    link_->lost = true;
    throw lost_error();
  }
}

void JobStore::set_job(const std::string& job_id, const std::string& key_space) {
  job_id_ = job_id;
  key_space_ = key_space;
  prefix_ = "plait/" + job_id + "/" + (key_space.empty() ? "" : key_space + "/");
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

namespace {

// A listening socket on 127.0.0.1:`port` (0: a free one), which the store takes over: c10d's
// own server binds every interface, and only a socket of our own can be bound narrower.
int loopback_listener(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  PLAIT_CHECK(fd >= 0, concat("cannot open a socket for the rendezvous store: ", std::strerror(errno)), "check the process's file limits");
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 2048) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(concat("cannot host the rendezvous store on 127.0.0.1:", port, ": ", why),
                "the port may be taken; choose another with --master-port");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

std::unique_ptr<JobStore> JobStore::host(int port, const std::string& job_id, std::chrono::milliseconds timeout,
                                         const std::string& token, bool loopback_only) {
  c10d::TCPStoreOptions options;
  if (loopback_only) options.masterListenFd = loopback_listener(port);
  options.port = static_cast<uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = timeout;
  std::unique_ptr<JobStore> s(new JobStore());
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(loopback_only ? "127.0.0.1" : "0.0.0.0", options);
    s->port_ = tcp->getPort();
    s->store_ = std::move(tcp);
  } catch (const std::exception& e) {
    throw Error(concat("cannot host the rendezvous store on port ", port, ": ", e.what()),
                "the port may be taken; choose another with --master-port");
  }
  publish_token_check(*s->store_, token);
  s->store_->set(kJobKey, bytes_of(job_id));
  s->set_job(job_id, token_key_space(token));
  return s;
}

std::unique_ptr<JobStore> JobStore::connect(const std::string& addr, int port, const std::string& job_id,
                                            std::chrono::milliseconds timeout, const std::string& who,
                                            const std::string& token, bool publish_check,
                                            std::chrono::milliseconds reply_timeout) {
  const auto start = std::chrono::steady_clock::now();
  const std::string unreachable = wait_for_listener(addr, port, start + timeout);
  auto fail = [&](std::string why) {
    why = why.substr(0, why.find('\n'));
    throw Error(concat(who, " could not reach the rendezvous store at ", addr, ":", port, " within ",
                       timeout.count() / 1000.0, " s (waiting for: a TCP connection to the store): ", why),
                "check MASTER_ADDR/MASTER_PORT (--master-addr/--master-port) and that rank 0 or the launcher "
                "of node 0 is running");
  };
  if (!unreachable.empty()) fail(unreachable);
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 start + timeout - std::chrono::steady_clock::now()),
                             std::chrono::milliseconds(1000));
  std::unique_ptr<JobStore> s(new JobStore());
  if (reply_timeout.count() > 0) {
    s->link_ = std::make_shared<Link>();
    s->link_->where = concat(addr, ":", port);
    s->link_->reply_timeout = reply_timeout;
  }
  try {
    s->store_ = c10::make_intrusive<c10d::TCPStore>(addr, options);
    s->store_->setTimeout(timeout);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  s->port_ = port;
  const std::string where = concat(addr, ":", port);
  if (publish_check) publish_token_check(*s->store_, token);
  check_token(*s->store_, token, where, who, timeout);
  std::string id = job_id;
  if (id.empty()) {
    try {
      s->store_->wait({kJobKey}, timeout);
    } catch (const std::exception&) {
      throw Error(concat(who, " reached the store at ", addr, ":", port, " but no job id was published there within ",
                         timeout.count() / 1000.0, " s"),
                  "is a plait launcher hosting that store?");
    }
    id = string_of(s->store_->get(kJobKey));
  }
  s->set_job(id, token_key_space(token));
  return s;
}

JobStore::~JobStore() = default;

std::unique_ptr<JobStore> JobStore::view(const std::string& job_id) const {
  std::unique_ptr<JobStore> s(new JobStore());
  s->store_ = store_;
  s->link_ = link_;
  s->port_ = port_;
  s->set_job(job_id, key_space_);
  return s;
}

void JobStore::set(const std::string& key, const std::string& value) {
  guarded([store = store_, key = prefix_ + key, value] { store->set(key, bytes_of(value)); });
}

std::optional<std::string> JobStore::try_get(const std::string& key) {
  return guarded([store = store_, key = prefix_ + key]() -> std::optional<std::string> {
    if (!store->check({key})) return std::nullopt;
    return string_of(store->get(key));
  });
}

std::string JobStore::wait_get(const std::string& key, std::chrono::milliseconds timeout,
                               const std::string& waiting_for) {
  try {
    guarded([store = store_, key = prefix_ + key, timeout] { store->wait({key}, timeout); }, timeout);
  } catch (const std::exception& e) {
    if (lost()) throw;
    throw Error(concat("waited ", timeout.count() / 1000.0, " s for ", waiting_for, " in vain"),
                "another rank failed or never started: see the launcher output and the rank logs");
  }
  return guarded([store = store_, key = prefix_ + key] { return string_of(store->get(key)); });
}

int64_t JobStore::add(const std::string& key, int64_t amount) {
  return guarded([store = store_, key = prefix_ + key, amount] { return store->add(key, amount); });
}

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

void report_launcher_end(JobStore& store, int node_rank) { store.set(concat("launcher-ended/", node_rank), "1"); }

std::vector<int> await_launcher_ends(JobStore& store, int nnodes, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<int> missing;
  do {
    missing.clear();
    for (int node = 1; node < nnodes; ++node) {
      if (!store.try_get(concat("launcher-ended/", node))) missing.push_back(node);
    }
    if (missing.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return missing;
}

StoreAbortChannel::StoreAbortChannel(JobStore& store, int world_size, const NodeHeartbeat* heartbeat)
    : store_(store), world_size_(world_size), heartbeat_(heartbeat) {}

template <class T, class Fn>
T StoreAbortChannel::unless_lost(T otherwise, Fn&& fn) {
  if (store_.lost()) return otherwise;
  try {
    return fn();
  } catch (const std::exception&) {
    if (!store_.lost()) throw;
    return otherwise;  // lost() says so
  }
}

void StoreAbortChannel::post(const std::string& reason) {
  unless_lost(0, [&] {
    if (!store_.try_get("abort")) store_.set("abort", reason);
    return 0;
  });
}

void StoreAbortChannel::post_stop(const std::string& reason, int signal) {
  unless_lost(0, [&] {
    // The signal goes first: a launcher that reads the stop finds its signal beside it.
    if (!store_.try_get("abort")) {
      store_.set("abort_signal", std::to_string(signal));
      store_.set("abort", reason);
    }
    return 0;
  });
}

int StoreAbortChannel::stop_signal() {
  return unless_lost(0, [&] {
    const auto signal = store_.try_get("abort_signal");
    return signal ? std::atoi(signal->c_str()) : 0;
  });
}

std::optional<std::string> StoreAbortChannel::poll() {
  return unless_lost(std::optional<std::string>{}, [&]() -> std::optional<std::string> {
    if (auto reason = store_.try_get("abort")) return reason;
    if (auto silent = lost(NodeHeartbeat::kNeverHeardAfter)) {  // its ranks may not be waiting for it yet
      post(*silent);
      return silent;
    }
    return std::nullopt;
  });
}

std::optional<std::string> StoreAbortChannel::lost(std::chrono::milliseconds quiet) {
  return heartbeat_ != nullptr ? heartbeat_->lost(quiet) : std::nullopt;
}

std::vector<std::string> StoreAbortChannel::pending_operations() {
  return unless_lost(std::vector<std::string>{}, [&] {
    std::vector<std::string> out;
    for (int r = 0; r < world_size_; ++r) {
      if (auto p = store_.try_get(concat("pending/", r)); p && !p->empty()) out.push_back(concat("rank ", r, ": ", *p));
    }
    return out;
  });
}

void report_rank_failure(JobStore& store, const RankFailure& failure) {
  store.set(concat("failure/", failure.rank),
            nlohmann::json{{"rank", failure.rank},
                           {"message", failure.message},
                           {"hint", failure.hint},
                           {"peer_lost", failure.peer_lost}}
                .dump());
}

std::optional<RankFailure> StoreAbortChannel::rank_failure(int rank) {
  const auto text = unless_lost(std::optional<std::string>{}, [&] { return store_.try_get(concat("failure/", rank)); });
  if (!text) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    return RankFailure{j.at("rank").get<int>(), j.at("message").get<std::string>(), j.at("hint").get<std::string>(),
                       j.value("peer_lost", false)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<RankFailure> StoreAbortChannel::first_own_failure() {
  for (int r = 0; r < world_size_; ++r) {
    if (auto f = rank_failure(r); f && !f->peer_lost) return f;
  }
  return std::nullopt;
}

}  // namespace plait
