/* interrupt.h: what a signal that ends the run leaves behind, and what it says.
 *
 * SIGHUP (a closed terminal or ssh session), SIGINT (Ctrl-C), SIGQUIT (Ctrl-\), SIGTERM
 * (scancel, a time limit, mpiexec/srun forwarding), SIGUSR1 and SIGUSR2 (Slurm's `--signal`
 * warning), SIGALRM and SIGVTALRM (a timer armed by someone else) and SIGXCPU (a CPU-time
 * limit) end qmlpipe with exit status 128 + the signal (129, 130, 131, 143, 138, 140, 142,
 * 154, 152), after the handler has, with async-signal-safe calls only (write, unlink, rmdir,
 * clock_gettime through clock.h, _exit):
 *   - removed every temporary file of a write in progress (atomic_file.h), so no partial file
 *     stays and the previous results file is left as it was;
 *   - said on stderr (rank 0) which signal, which stage was running (or what was being written,
 *     or "before the first stage"), how long it had run and the run so far, which stages had
 *     finished, and what can be resumed (qp_interrupt_set_resume_hint; by default "checkpoint:
 *     not configured").
 * SIGPIPE and SIGXFSZ are ignored: a write into a pipe without a reader or beyond `ulimit -f`
 * then fails (EPIPE, EFBIG) and its writer reports the file and removes its temporary (exit 8;
 * standard output: main's check at exit), where the default action killed qmlpipe silently
 * and left the temporary. A signal ignored when qmlpipe started (nohup) stays ignored.
 * No budget report is written: HDF5 is not async-signal-safe, and a stage spends its time
 * inside one LAPACK/ScaLAPACK call that no flag could interrupt at a safe point; the message
 * holds the figures instead.
 *
 * The stage is known through qp_stage_push/pop (budget.h), which call
 * qp_interrupt_stage_enter/leave: names are copied into static buffers, published with a
 * signal fence, so the handler never reads a half-written one. */
#ifndef QP_INTERRUPT_H
#define QP_INTERRUPT_H

/** Installs the handlers (once; later calls only update the rank). `rank`: the MPI rank, 0
 *  without MPI; only rank 0 prints (srun and mpiexec forward a signal to every rank), every
 *  rank removes its temporaries and exits. Not collective. */
void qp_interrupt_install(int rank);

/** A stage was pushed (budget.h): its name (copied, at most 63 characters) and start time.
 *  Test hook: QP_TEST_PAUSE=<stage name> pauses here, inside the stage (qp_interrupt_test_pause).
 */
void qp_interrupt_stage_enter(const char *name);
/** The innermost stage was popped; a top-level stage joins the finished ones. */
void qp_interrupt_stage_leave(void);
/** Forgets the finished stages (a new run in the same process). */
void qp_interrupt_reset(void);

/** What the message says can be resumed (copied, at most 511 characters); NULL or "" puts back
 *  the default, "checkpoint: not configured, nothing can be resumed; run again from the start".
 *  For the checkpoint code: e.g. "resume with --resume: the checkpoint after basis_setup". */
void qp_interrupt_set_resume_hint(const char *text);

/** TEST HOOK, not for users (test_hooks.h: a no-op in qmlpipe): in the programs of the test
 *  library, when the environment variable QP_TEST_PAUSE equals `where` (a stage name, or
 *  "before_rename" in qp_atomic_commit), says "[qmlpipe] test hook QP_TEST_PAUSE: paused in
 *  WHERE" on stderr and sleeps for 60 s, so that a test can send a signal at a known point
 *  (tests/support/test_hooks_env.c). A no-op otherwise. */
void qp_interrupt_test_pause(const char *where);

#endif
