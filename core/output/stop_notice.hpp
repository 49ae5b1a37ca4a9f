#pragma once
// A rank (or a one-process run) that is stopped (SIGTERM, SIGINT, SIGHUP: its launcher
// stopping the job, or torchrun, Slurm, a user, Ctrl-C) or whose launcher dies (the parent-death signal: a launcher
// killed with SIGKILL leaves no one to report anything) says so before it goes: a line
// in its own log, and, when it keeps the run's status, a failed status with the reason and
// the last step that ended (under plait's launcher, which writes how the run ended: that
// step, so the launcher's status does not lag behind it).
// Then it exits with 128 + the signal. A watcher thread does the writing, outside the
// signal handler.
#include <functional>
#include <string>

namespace plait {

struct StopNotice {
  int rank = 0;
  std::string who;                // how its lines name the process; empty: "rank <rank>"
  std::string log_file;           // the rank's log (empty: none yet)
  bool stderr_is_logged = false;  // plait's launcher writes the rank's stderr into log_file
  std::string status_folder;  // the rank keeps status.json here (empty: it does not); under
                              // plait's launcher it writes it only when the launcher died
  bool launcher_parent = false;  // plait's launcher is the parent: its death is a signal too
  // What follows the stop's sentence for a run that can continue (its newest checkpoint,
  // and the command that continues it); asked when the stop comes.
  std::function<std::string()> how_to_continue;
};

// Once per rank process, as early as the run folder is known.
void install_stop_notice(const StopNotice& notice);

// When a stop signal came, the failure it causes (a peer gone mid-collective) is not the
// news: a rank's error path calls this, and it waits for the notice to end the process.
void yield_to_stop_notice();

// The signal plait's launcher asks the kernel to send a rank when the launcher dies
// (prctl PR_SET_PDEATHSIG).
int launcher_death_signal();

}  // namespace plait
