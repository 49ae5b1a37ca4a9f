#include "pipeline/p2p_order_check.hpp"

#include <map>
#include <tuple>

#include "pipeline/schedule_check.hpp"
#include "pipeline/transfer_groups.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

constexpr const char* kHint =
    "under NCCL a send waits until its receive is posted and a rank's point-to-point groups run in posting order; "
    "the executor posts each run of adjacent send/recv actions as one group, so put a pair's opposite messages "
    "next to each other, and both ranks' messages to each other in the same order";

// One send or receive of one rank's list.
struct Op {
  Action action;
  int rank = 0, peer = 0;
  std::size_t group = 0;  // index into its rank's groups
  bool done = false;
  Op* match = nullptr;
};

// What crosses: the direction, the sending stage and the microbatch.
std::tuple<bool, int64_t, int64_t> message_of(const Action& a) {
  const bool gradient = a.type == ActionType::send_grad || a.type == ActionType::recv_grad;
  return {gradient, is_send(a.type) ? a.stage : peer_stage(a), a.microbatch};
}

std::string as_seen(const Op& op) {
  return concat(describe(op.action), is_send(op.action.type) ? " to rank " : " from rank ", op.peer);
}

struct Rank {
  std::vector<std::vector<Op*>> groups;
  std::vector<std::ptrdiff_t> item_group;  // per action: its group, or -1 for a compute
  std::size_t host = 0;                    // next action the host reaches
  std::size_t posted = 0;                  // groups posted
  std::size_t head = 0;                    // first group not complete
};

class OrderPlay {
 public:
  OrderPlay(const std::vector<std::vector<Action>>& lists, const ScheduleSpec& spec, const std::string& where)
      : lists_(lists), spec_(spec), where_(where), ranks_(lists.size()) {
    recv_of_.assign(static_cast<std::size_t>(2 * spec.stages() * spec.microbatches), nullptr);
    build();
    owner_last_ = last_backward_of(0);
    borrower_last_ = last_backward_of(spec.stages() - 1);
  }

  void match() {
    std::map<std::pair<int, int>, std::vector<Op*>> sends, recvs;  // (from, to), in posting order
    for (auto& op : ops_) {
      if (is_send(op.action.type)) sends[{op.rank, op.peer}].push_back(&op);
      else recvs[{op.peer, op.rank}].push_back(&op);
    }
    for (auto& [pair, sent] : sends) {
      const auto& got = recvs[pair];
      for (std::size_t k = 0; k < sent.size(); ++k) {
        if (k < got.size() && message_of(sent[k]->action) == message_of(got[k]->action)) {
          sent[k]->match = got[k];
          got[k]->match = sent[k];
          continue;
        }
        fail(concat("ranks ", pair.first, " and ", pair.second, " would mismatch under NCCL: rank ", pair.first,
                    "'s message ", k + 1, " to rank ", pair.second, " is its ", describe(sent[k]->action),
                    ", but rank ", pair.second, "'s receive ", k + 1, " from rank ", pair.first, " is its ",
                    k < got.size() ? describe(got[k]->action) : std::string("missing")));
      }
    }
  }

  void play() {
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t r = 0; r < ranks_.size(); ++r) moved = advance_host(r) || moved;
      for (std::size_t r = 0; r < ranks_.size(); ++r) moved = advance_groups(r) || moved;
    }
    std::string stuck;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& k = ranks_[r];
      if (k.host == lists_[r].size() && k.head == k.groups.size()) continue;
      stuck += concat(stuck.empty() ? "" : "; ", held_at(r));
    }
    if (!stuck.empty()) fail(concat("under NCCL's point-to-point order the ranks would wait for each other forever: ", stuck));
  }

 private:
  void build() {
    std::size_t transfers = 0;  // ops_ never grows past this: groups point into it
    for (const auto& list : lists_) {
      for (const Action& a : list) transfers += is_transfer(a.type) ? 1 : 0;
    }
    ops_.reserve(transfers);
    for (std::size_t r = 0; r < lists_.size(); ++r) {
      const auto& list = lists_[r];
      Rank& rank = ranks_[r];
      rank.item_group.assign(list.size(), -1);
      for (std::size_t k = 0; k < list.size();) {
        if (!is_transfer(list[k].type)) {
          ++k;
          continue;
        }
        const std::size_t end = transfer_group_end(list, k);
        rank.groups.emplace_back();
        for (; k < end; ++k) {
          const Action& a = list[k];
          ops_.push_back({a, static_cast<int>(r), static_cast<int>(rank_of_stage(peer_stage(a), spec_.pp)),
                          rank.groups.size() - 1});
          rank.groups.back().push_back(&ops_.back());
          rank.item_group[k] = static_cast<std::ptrdiff_t>(rank.groups.size() - 1);
          if (!is_send(a.type)) recv_of_[recv_index(a.type, a.stage, a.microbatch)] = &ops_.back();
        }
      }
    }
  }

  // Each receive's place in recv_of_: its kind, its stage, its microbatch (a checked
  // schedule's: in range).
  std::size_t recv_index(ActionType t, int64_t stage, int64_t mb) const {
    const int64_t kind = t == ActionType::recv_grad ? 1 : 0;
    return static_cast<std::size_t>((kind * spec_.stages() + stage) * spec_.microbatches + mb);
  }

  // The receive a compute reads, or null.
  const Op* input_of(const Action& a) const {
    auto recv = [&](ActionType t) { return recv_of_[recv_index(t, a.stage, a.microbatch)]; };
    if (a.type == ActionType::forward && a.stage > 0) return recv(ActionType::recv_activation);
    if (a.type == ActionType::backward && a.stage < spec_.stages() - 1) return recv(ActionType::recv_grad);
    return nullptr;
  }

  // The first stage's last backward adds the tied gradient the last stage sends after
  // its own last backward.
  bool tie_ready(const Action& a) const {
    return spec_.pp == 1 || !same(a, owner_last_) || tie_sent_;
  }

  static bool same(const Action& a, const Action& b) {
    return a.type == b.type && a.stage == b.stage && a.microbatch == b.microbatch;
  }

  Action last_backward_of(int64_t stage) const {
    Action last{ActionType::backward, stage, -1};
    for (const Action& a : lists_[static_cast<std::size_t>(rank_of_stage(stage, spec_.pp))]) {
      if (a.type == ActionType::backward && a.stage == stage) last.microbatch = a.microbatch;
    }
    return last;
  }

  bool advance_host(std::size_t r) {
    Rank& rank = ranks_[r];
    const auto& list = lists_[r];
    bool moved = false;
    while (rank.host < list.size()) {
      const Action& a = list[rank.host];
      if (rank.item_group[rank.host] >= 0) {
        rank.posted = static_cast<std::size_t>(rank.item_group[rank.host]) + 1;
      } else {
        const Op* input = input_of(a);
        if ((input != nullptr && !input->done) || !tie_ready(a)) break;
        tie_sent_ = tie_sent_ || same(a, borrower_last_);
      }
      ++rank.host;
      moved = true;
    }
    return moved;
  }

  bool active(const Op& op) const {
    const Rank& rank = ranks_[static_cast<std::size_t>(op.rank)];
    return op.group == rank.head && rank.head < rank.posted;
  }

  bool advance_groups(std::size_t r) {
    Rank& rank = ranks_[r];
    bool moved = false;
    while (rank.head < rank.posted) {
      bool complete = true;
      for (Op* op : rank.groups[rank.head]) {
        if (!op->done && active(*op->match)) {
          op->done = op->match->done = true;
          moved = true;
        }
        complete = complete && op->done;
      }
      if (!complete) break;
      ++rank.head;
      moved = true;
    }
    return moved;
  }

  std::string held_at(std::size_t r) const {
    const Rank& rank = ranks_[r];
    if (rank.head < rank.posted) {
      for (const Op* op : rank.groups[rank.head]) {
        if (op->done) continue;
        const Rank& peer = ranks_[static_cast<std::size_t>(op->peer)];
        const bool posted = op->match->group < peer.posted;
        const std::string where =
            posted ? concat(", queued behind an earlier group of rank ", op->peer)
                   : concat(", which rank ", op->peer, " has not posted: it waits to run ",
                            describe(lists_[static_cast<std::size_t>(op->peer)][peer.host]));
        return concat("rank ", r, "'s ", as_seen(*op), " waits for rank ", op->peer, "'s ", as_seen(*op->match), where);
      }
    }
    if (rank.host < lists_[r].size()) return concat("rank ", r, " waits to run ", describe(lists_[r][rank.host]));
    return concat("rank ", r, " is done");
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(concat(where_, what), kHint); }

  const std::vector<std::vector<Action>>& lists_;
  const ScheduleSpec& spec_;
  std::string where_;
  std::vector<Op> ops_;
  std::vector<Rank> ranks_;
  std::vector<Op*> recv_of_;  // each receive, at recv_index (a vector: a planner's search plays thousands)
  Action owner_last_, borrower_last_;  // the tie's ends: the first stage's and the last stage's last backward
  bool tie_sent_ = false;              // the last stage ran its last backward
};

}  // namespace

void check_p2p_order(const std::vector<std::vector<Action>>& ranks, const ScheduleSpec& spec, const std::string& where) {
  OrderPlay play(ranks, spec, where);
  play.match();
  play.play();
}

}  // namespace plait
