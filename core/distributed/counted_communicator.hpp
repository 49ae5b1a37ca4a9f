#pragma once
// Wraps a comm plugin's Communicator so that every operation is counted (CommStats),
// described by its tag, and its failure or timeout names the group and who asked.
// Every operation is kept in the rank's flight recorder too, numbered per group.
// Plugins cannot forget to count: the core hands out only wrapped communicators.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "distributed/comm_stats.hpp"
#include "distributed/flight_recorder.hpp"
#include "plait/sdk/communicator.hpp"

namespace plait {

class FaultInjector;

// `ranks`: the group's members as global ranks (a trace's send and receive name both
// ends by them). `device`: the group's ("cpu", "cuda:1"); on the CPU an operation is
// done when its wait returns, on a GPU it may still be running.
// Every tensor handed to it must be on `device`.
std::shared_ptr<Communicator> make_counted(std::shared_ptr<Communicator> inner, std::string axis,
                                           std::string group_name, std::vector<int> ranks, CommStats& stats,
                                           FlightRecorder& flight, const std::string& device,
                                           const std::atomic<FaultInjector*>* faults = nullptr);

// The same for a test: `tensors_on` is where its tensors must be, `ends_at_wait` whether an
// operation is done when its wait returns (as on the host) or only once its work says so
// (as on a GPU), so that a device's behaviour can be checked with host tensors.
std::shared_ptr<Communicator> make_counted_for_test(std::shared_ptr<Communicator> inner, std::string group_name,
                                                    std::vector<int> ranks, CommStats& stats, FlightRecorder& flight,
                                                    const std::string& tensors_on, bool ends_at_wait);

}  // namespace plait
