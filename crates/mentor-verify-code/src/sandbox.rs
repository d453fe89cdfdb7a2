//! The sandbox: one wasmtime engine, the pre-linked Python runtime, and a fresh store per
//! execution.
//!
//! Invariants: every execution gets a new instance (copy-on-write from the pre-initialised
//! snapshot, through the pooling allocator), so nothing a program does survives it; the guest
//! sees no preopened directories, an empty environment, no sockets and no processes; limits
//! ([`Limits`]) are enforced by the host. [`Sandbox`] is `Send + Sync`: share one per process.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable, TypedFunc};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
    Trap,
};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::compile_cache::{self, LoadReport};
use crate::limits::EPOCH_TICK;
use crate::output::CappedOutput;
use crate::{Error, Limits, Result};

/// How the sandbox is built. Everything is explicit: the library reads no environment.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The pre-initialised CPython component (`AssetDir::python_runtime()`).
    pub runtime: PathBuf,
    /// Where compiled artifacts are cached (`AssetDir::compile_cache()`); `None` compiles on
    /// every construction (9–30 s).
    pub cache_dir: Option<PathBuf>,
    /// How many executions run at once (batch workers and the async permit count).
    /// `0` means the number of available cores.
    pub concurrency: usize,
    /// Default limits of each execution.
    pub limits: Limits,
    /// The largest memory any execution may be given (sizes the instance pool's slots);
    /// `limits.memory_bytes` must not exceed it.
    pub max_memory_bytes: usize,
    /// Maximum wasm stack in bytes (engine-wide). Deep Python recursion hits CPython's
    /// recursion limit first; this bounds what native recursion can consume.
    pub max_wasm_stack: usize,
    /// How a pooled memory slot is made pristine again for the next execution.
    pub slot_reset: SlotReset,
}

impl SandboxConfig {
    /// A configuration with defaults for everything but the runtime and cache paths.
    pub fn new(runtime: impl Into<PathBuf>, cache_dir: Option<PathBuf>) -> Self {
        Self {
            runtime: runtime.into(),
            cache_dir,
            concurrency: 0,
            limits: Limits::default(),
            max_memory_bytes: 1 << 30,
            max_wasm_stack: 4 << 20,
            slot_reset: SlotReset::default(),
        }
    }

    /// The configuration for the runtime and cache of an asset directory.
    pub fn from_assets(assets: &mentor_core::assets::AssetDir) -> Self {
        Self::new(assets.python_runtime(), Some(assets.compile_cache()))
    }
}

/// How a used slot of the instance pool is reset to the runtime's pristine memory image before
/// the next execution. Every strategy gives the next run exactly the image's contents; they
/// differ in cost. Each run of the interpreter touches pages scattered across its ~20 MiB heap
/// (measured: ~160 for an empty program, ~1,600 for a HumanEval task through the judging
/// harness, which reads every watched module); a page released after one run costs a page
/// fault in the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotReset {
    /// Copy the image back over only the pages the run dirtied, found with Linux's
    /// `PAGEMAP_SCAN` (kernel 6.7 or newer; wasmtime reads at most 32 dirty regions, at most
    /// `bytes` of them) and keep them mapped; release the rest. Elsewhere: copy back the first
    /// `bytes`. Cheapest for short runs.
    DirtyPages {
        /// The most bytes reset by copying.
        bytes: usize,
    },
    /// Copy the image back over the first `bytes` of memory after every run and keep them
    /// mapped: a run whose heap stays inside them takes no page faults, but every reset pays
    /// for the copy.
    CopyFirst {
        /// How many bytes, from the start of linear memory.
        bytes: usize,
    },
    /// Release all memory the run touched (the next run faults every page in again).
    Release,
}

impl Default for SlotReset {
    /// Copy the first 32 MiB, which holds all the pages the judging harness touches. Measured
    /// on the 164 HumanEval tasks, one worker, interleaved against [`SlotReset::DirtyPages`] with
    /// 1 MiB: judged 27.2 → 19.9 ms mean per task (1,561 → 0 page faults), whole programs
    /// unchanged (13.0 → 12.8 ms), an empty program 3.2 → 7.1 ms (the copy); see
    /// `docs/PERFORMANCE.md`.
    fn default() -> Self {
        SlotReset::CopyFirst { bytes: 32 << 20 }
    }
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// `run`: the program finished with this exit code (0, a `SystemExit` code, or 1 for an
    /// uncaught exception).
    Code(i32),
    /// `judge`: the harness returned its report.
    Report(String),
    /// The process was ended from inside (`os._exit(n)`, WASI `proc_exit`) with this code.
    ProcessExit(i32),
    /// The CPU deadline (epoch) or the wall-clock timeout fired.
    Timeout,
    /// The guest trapped after a memory growth was refused.
    MemoryLimit,
    /// The guest exhausted the wasm stack.
    StackOverflow,
    /// Any other trap.
    Trap(String),
}

/// The result of one execution.
#[derive(Debug, Clone)]
pub struct Execution {
    /// How it ended.
    pub exit: Exit,
    /// Captured stdout (at most `stdout_bytes`).
    pub stdout: Vec<u8>,
    /// Captured stderr (at most `stderr_bytes`).
    pub stderr: Vec<u8>,
    /// Whether stdout was cut at its cap.
    pub stdout_truncated: bool,
    /// Whether stderr was cut at its cap.
    pub stderr_truncated: bool,
    /// Whether a memory growth was refused (the program may have recovered from it).
    pub memory_limited: bool,
    /// Progress events as the guest sent them (at most 10,000 and 4 MiB of them): the judging
    /// harness tags each with a digest of the run's secret, and only events with a valid tag
    /// are believed (candidate code can call the import too; see `runner.wit`).
    pub progress: Vec<String>,
    /// Wall time of the execution.
    pub elapsed: Duration,
}

/// What the guest should do.
enum Call<'a> {
    Run(&'a str),
    Judge(&'a str),
}

struct Limiter {
    memory_bytes: usize,
    hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = desired <= self.memory_bytes;
        self.hit |= !ok;
        Ok(ok)
    }
    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// Which instance a store runs: the imports behave by role (in any instance but the tests'
/// they are inert, so the candidate can neither forge progress nor call out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A whole program (`run`).
    Program,
    /// The candidate's instance of a judged run (`serve`).
    Candidate,
    /// The tests' instance of a judged run (`judge`).
    Tests,
}

/// The candidate's instance, held by the tests' store while its tests run.
struct Peer {
    store: Store<State>,
    serve: TypedFunc<(String,), (String,)>,
}

struct State {
    ctx: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    progress: Vec<String>,
    progress_bytes: usize,
    role: Role,
    /// Tests only: the candidate's instance (taken out while a call runs in it).
    peer: Option<Box<Peer>>,
    /// Tests only: how the candidate's instance ended, when it ended the run (a trap in it:
    /// time, memory, a process exit).
    peer_exit: Option<Exit>,
    /// Tests only: whether a memory growth of the candidate's instance was refused.
    peer_memory_limited: bool,
}

/// The most progress events kept per execution, and their total size.
const MAX_EVENTS: usize = 10_000;
const MAX_EVENT_BYTES: usize = 4 << 20;

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.ctx, table: &mut self.table }
    }
}

/// Stops the epoch ticker when the sandbox is dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// CPython in wasmtime. Construct once (it compiles or loads the runtime), share everywhere.
pub struct Sandbox {
    engine: Engine,
    pre: InstancePre<State>,
    permits: Semaphore,
    concurrency: usize,
    limits: Limits,
    /// Read and set by the warm-up self-check (`warm_up.rs`).
    pub(crate) max_memory_bytes: usize,
    load: LoadReport,
    /// Read and set by the warm-up self-check (`warm_up.rs`).
    pub(crate) warm_up: Duration,
    _ticker: Ticker,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("concurrency", &self.concurrency)
            .field("limits", &self.limits)
            .field("load", &self.load)
            .finish_non_exhaustive()
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

impl Sandbox {
    /// Builds the engine, loads (or compiles and caches) the runtime and pre-links it, without
    /// the warm-up self-check that [`Sandbox::new`] (in `warm_up.rs`, above the harness that
    /// judges it) adds before handing the sandbox out.
    pub(crate) fn unwarmed(config: &SandboxConfig) -> Result<Self> {
        if config.limits.memory_bytes > config.max_memory_bytes {
            return Err(Error::Config(format!(
                "limits.memory_bytes ({}) exceeds max_memory_bytes ({})",
                config.limits.memory_bytes, config.max_memory_bytes
            )));
        }
        let concurrency = if config.concurrency == 0 { cores() } else { config.concurrency };
        // A judged run holds two instances (the candidate's and the tests'); leave room for one more
        // per worker while a finished run's slots are being released.
        let slots = u32::try_from(concurrency).unwrap_or(u32::MAX / 64).saturating_mul(3).max(3);
        let mut c = Config::new();
        c.epoch_interruption(true);
        c.max_wasm_stack(config.max_wasm_stack);
        c.async_stack_size(config.max_wasm_stack + (4 << 20));
        let mut pool = PoolingAllocationConfig::default();
        pool.total_memories(slots * 4)
            .total_tables(slots * 4)
            .total_core_instances(slots * 16)
            .total_component_instances(slots)
            .total_stacks(slots)
            .max_memory_size(config.max_memory_bytes)
            .max_core_instance_size(4 << 20)
            .max_component_instance_size(4 << 20)
            .max_core_instances_per_component(64)
            .max_memories_per_component(16)
            .max_tables_per_component(16)
            .table_elements(100_000);
        let (scan, keep) = match config.slot_reset {
            SlotReset::DirtyPages { bytes } => (Enabled::Auto, bytes),
            SlotReset::CopyFirst { bytes } => (Enabled::No, bytes),
            SlotReset::Release => (Enabled::No, 0),
        };
        pool.pagemap_scan(scan).linear_memory_keep_resident(keep).table_keep_resident(keep);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        c.memory_init_cow(true);
        let engine = Engine::new(&c).map_err(|e| Error::wasmtime("engine", &e))?;
        let (component, load) = compile_cache::load(&engine, &config.runtime, config.cache_dir.as_deref())?;
        let pre = link(&engine, &component)?;
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::Builder::new()
                .name("mentor-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|source| Error::Os {
                    what: "spawning the epoch thread".into(),
                    source: Some(source),
                })?
        };
        let sandbox = Self {
            engine,
            pre,
            permits: Semaphore::new(concurrency),
            concurrency,
            limits: config.limits.clone(),
            max_memory_bytes: config.max_memory_bytes,
            load,
            warm_up: Duration::ZERO,
            _ticker: Ticker { stop, handle: Mutex::new(Some(handle)) },
        };
        Ok(sandbox)
    }

    /// How many executions run at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The default limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// How the runtime was loaded (cache hit or compile, and how long it took).
    pub fn load_report(&self) -> &LoadReport {
        &self.load
    }

    /// How long the warm-up self-check took in [`Sandbox::new`] (a trivial judged program).
    pub fn warm_up_time(&self) -> Duration {
        self.warm_up
    }

    /// Runs a whole program with `stdin`, under the default limits.
    pub async fn run(&self, code: &str, stdin: &[u8]) -> Result<Execution> {
        self.execute(Call::Run(code), stdin, &self.limits).await
    }

    /// Runs a whole program with `stdin`, under `limits`.
    pub async fn run_with(&self, code: &str, stdin: &[u8], limits: &Limits) -> Result<Execution> {
        self.execute(Call::Run(code), stdin, limits).await
    }

    /// Runs the judging harness on a request (see `runner.wit`); empty stdin.
    pub(crate) async fn judge(&self, request: &str, limits: &Limits) -> Result<Execution> {
        self.execute(Call::Judge(request), b"", limits).await
    }

    /// [`Sandbox::run`] from synchronous code (a private single-threaded runtime).
    pub fn run_blocking(&self, code: &str, stdin: &[u8]) -> Result<Execution> {
        block_on(self.run(code, stdin))?
    }

    /// [`Sandbox::run_with`] from synchronous code.
    pub fn run_blocking_with(&self, code: &str, stdin: &[u8], limits: &Limits) -> Result<Execution> {
        block_on(self.run_with(code, stdin, limits))?
    }

    /// Runs many programs (code, stdin) under the default limits on
    /// [`Sandbox::concurrency`] worker threads. Results are in input order.
    pub fn run_batch(&self, programs: &[(String, Vec<u8>)]) -> Result<Vec<Result<Execution>>> {
        self.parallel(programs, |rt, (code, stdin)| rt.block_on(self.run(code, stdin)))
    }

    /// Applies `work` to every item with [`Sandbox::concurrency`] worker threads, each with
    /// its own single-threaded async runtime. Results are in input order.
    pub(crate) fn parallel<T: Sync, R: Send>(
        &self,
        items: &[T],
        work: impl Fn(&tokio::runtime::Runtime, &T) -> R + Sync,
    ) -> Result<Vec<R>> {
        let workers = self.concurrency.min(items.len()).max(1);
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    let rt = match runtime() {
                        Ok(rt) => rt,
                        Err(e) => {
                            *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                            return;
                        }
                    };
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let r = work(&rt, item);
                        if let Some(slot) = results.lock().unwrap_or_else(PoisonError::into_inner).get_mut(i)
                        {
                            *slot = Some(r);
                        }
                    }
                });
            }
        });
        if let Some(e) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            return Err(e);
        }
        let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
        let n = results.len();
        let out: Vec<R> = results.into_iter().flatten().collect();
        if out.len() != n {
            return Err(Error::Os {
                what: "a batch worker stopped before finishing its items".into(),
                source: None,
            });
        }
        Ok(out)
    }

    async fn execute(&self, call: Call<'_>, stdin: &[u8], limits: &Limits) -> Result<Execution> {
        if limits.memory_bytes > self.max_memory_bytes {
            return Err(Error::Config(format!(
                "memory limit {} exceeds the sandbox's max_memory_bytes {}",
                limits.memory_bytes, self.max_memory_bytes
            )));
        }
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| Error::Os { what: "the sandbox's permits were closed".into(), source: None })?;
        let t0 = Instant::now();
        let stdout = CappedOutput::new(limits.stdout_bytes);
        let stderr = CappedOutput::new(limits.stderr_bytes);
        let (exit, memory_limited, progress) = match call {
            Call::Run(code) => {
                let mut store = self.store(Role::Program, stdin, &stdout, &stderr, limits);
                let outcome =
                    tokio::time::timeout(limits.wall_time, run_program(&self.pre, &mut store, code)).await;
                let hit = store.data().limiter.hit;
                let exit = match outcome {
                    Ok(Ok(rc)) => Exit::Code(rc),
                    Ok(Err(e)) => classify(&e, hit)?,
                    Err(_elapsed) => Exit::Timeout,
                };
                (exit, hit, Vec::new())
            }
            Call::Judge(request) => {
                // The candidate's instance captures the program's output; the tests'
                // instance writes nothing the verdict reads, so its output is dropped.
                let candidate = self.store(Role::Candidate, b"", &stdout, &stderr, limits);
                let sink = (CappedOutput::new(64 << 10), CappedOutput::new(64 << 10));
                let mut tests = self.store(Role::Tests, b"", &sink.0, &sink.1, limits);
                let outcome =
                    tokio::time::timeout(limits.wall_time, judge(&self.pre, candidate, &mut tests, request))
                        .await;
                let state = tests.data_mut();
                let progress = std::mem::take(&mut state.progress);
                let hit = state.limiter.hit
                    || state.peer_memory_limited
                    || state.peer.as_ref().is_some_and(|p| p.store.data().limiter.hit);
                let exit = match outcome {
                    Ok(Ok(report)) => Exit::Report(report),
                    Ok(Err(e)) => match state.peer_exit.take() {
                        Some(exit) => exit,
                        None => classify(&e, hit)?,
                    },
                    Err(_elapsed) => Exit::Timeout,
                };
                (exit, hit, progress)
            }
        };
        let (stdout, stdout_truncated) = stdout.take();
        let (stderr, stderr_truncated) = stderr.take();
        Ok(Execution {
            exit,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            memory_limited,
            progress,
            elapsed: t0.elapsed(),
        })
    }

    /// A fresh store under `limits` for one instance of `role`.
    fn store(
        &self,
        role: Role,
        stdin: &[u8],
        stdout: &CappedOutput,
        stderr: &CappedOutput,
        limits: &Limits,
    ) -> Store<State> {
        let ctx = WasiCtxBuilder::new()
            .stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let state = State {
            ctx,
            table: ResourceTable::new(),
            limiter: Limiter { memory_bytes: limits.memory_bytes, hit: false },
            progress: Vec::new(),
            progress_bytes: 0,
            role,
            peer: None,
            peer_exit: None,
            peer_memory_limited: false,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        // Each instance has the same deadline: epochs are engine-wide, so the two instances of
        // a judged run share one budget of time, not two.
        store.set_epoch_deadline(limits.deadline_ticks());
        store.epoch_deadline_trap();
        store
    }
}

/// Runs a whole program.
async fn run_program(
    pre: &InstancePre<State>,
    store: &mut Store<State>,
    code: &str,
) -> wasmtime::Result<i32> {
    let instance = pre.instantiate_async(&mut *store).await?;
    let f = instance.get_typed_func::<(&str,), (i32,)>(&mut *store, "run")?;
    let (rc,) = f.call_async(&mut *store, (code,)).await?;
    Ok(rc)
}

/// A judged run: instantiates the candidate's instance, hands it to the tests' store (whose
/// `call-candidate` import forwards to it), then runs the tests. Errors are traps of either
/// instance; one of the candidate's is recorded in the tests' state (`peer_exit`).
async fn judge(
    pre: &InstancePre<State>,
    mut candidate: Store<State>,
    tests: &mut Store<State>,
    request: &str,
) -> wasmtime::Result<String> {
    let instance = pre.instantiate_async(&mut candidate).await?;
    let serve = instance.get_typed_func::<(String,), (String,)>(&mut candidate, "serve")?;
    tests.data_mut().peer = Some(Box::new(Peer { store: candidate, serve }));
    let instance = pre.instantiate_async(&mut *tests).await?;
    let f = instance.get_typed_func::<(&str,), (String,)>(&mut *tests, "judge")?;
    let (report,) = f.call_async(&mut *tests, (request,)).await?;
    Ok(report)
}

fn classify(e: &wasmtime::Error, memory_limited: bool) -> Result<Exit> {
    if let Some(x) = e.downcast_ref::<I32Exit>() {
        return Ok(Exit::ProcessExit(x.0));
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Ok(Exit::Timeout),
        Some(Trap::StackOverflow) => Ok(Exit::StackOverflow),
        Some(_) if memory_limited => Ok(Exit::MemoryLimit),
        Some(t) => Ok(Exit::Trap(t.to_string())),
        None if memory_limited => Ok(Exit::MemoryLimit),
        None => {
            let msg = format!("{e:?}");
            // Pool exhaustion or a broken component are infrastructure failures.
            if msg.contains("pooling allocator") || (msg.contains("instantiate") && msg.contains("limit")) {
                Err(Error::Wasmtime { stage: "instantiate", message: msg })
            } else {
                Ok(Exit::Trap(msg))
            }
        }
    }
}

fn link(engine: &Engine, component: &Component) -> Result<InstancePre<State>> {
    let mut linker = Linker::<State>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| Error::wasmtime("link", &e))?;
    let mut root = linker.root();
    root.func_wrap("progress", |mut cx: wasmtime::StoreContextMut<'_, State>, (event,): (String,)| {
        let state = cx.data_mut();
        if state.role == Role::Tests
            && state.progress.len() < MAX_EVENTS
            && state.progress_bytes + event.len() <= MAX_EVENT_BYTES
        {
            state.progress_bytes += event.len();
            state.progress.push(event);
        }
        Ok(())
    })
    .map_err(|e| Error::wasmtime("link", &e))?;
    root.func_wrap_async(
        "call-candidate",
        |mut cx: wasmtime::StoreContextMut<'_, State>, (request,): (String,)| {
            Box::new(async move {
                let state = cx.data_mut();
                if state.role != Role::Tests {
                    return Ok((r#"{"bad":"no candidate instance here"}"#.to_string(),));
                }
                let Some(mut peer) = state.peer.take() else {
                    return Err(wasmtime::Error::msg("the candidate's instance has already ended"));
                };
                let result = peer.serve.call_async(&mut peer.store, (request,)).await;
                let state = cx.data_mut();
                match result {
                    Ok((reply,)) => {
                        state.peer = Some(peer);
                        Ok((reply,))
                    }
                    Err(e) => {
                        // The candidate's instance trapped (time, memory, a process exit): the
                        // run ends here, with the candidate's exit as its outcome.
                        let hit = peer.store.data().limiter.hit;
                        state.peer_memory_limited |= hit;
                        state.peer_exit = Some(match classify(&e, hit) {
                            Ok(exit) => exit,
                            Err(infra) => Exit::Trap(infra.to_string()),
                        });
                        Err(e.context("the candidate's instance ended the run"))
                    }
                }
            })
        },
    )
    .map_err(|e| Error::wasmtime("link", &e))?;
    linker.instantiate_pre(component).map_err(|e| Error::wasmtime("link", &e))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|source| Error::Os { what: "starting an async runtime".into(), source: Some(source) })
}

/// Drives a future to completion on a private single-threaded runtime.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(f))
}
