// Process lifecycle hooks: normal exit, SIGTERM/SIGINT and fork.
//
// At exit the tracer flushes CUPTI and writes STATS. On SIGTERM/SIGINT the handler asks the
// writer thread to flush (bounded wait, async-signal-safe) and then chains to whatever handler
// the application had installed before us, which still runs; when that was the default action
// the file is finalised first and the signal re-raised, so the process dies as it would have.
// A forked child gets its own file and writer thread (pthread_atfork); the parent is unaffected.
// Limits: a handler the application installs after truffld replaces ours (periodic flushing
// still bounds the loss to TRUFFLD_FLUSH_MS); exec() discards unflushed records likewise.
// Thread-safety: InstallLifecycleHooks once, from the initialising thread.
#pragma once

namespace truffld::inject {

class Tracer;
void InstallLifecycleHooks(Tracer* tracer);

}  // namespace truffld::inject
