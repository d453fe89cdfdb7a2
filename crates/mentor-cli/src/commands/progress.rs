//! Terminal progress for training: a bar with live reward, ZRF and intervention counts,
//! evaluation lines above it, and the Ctrl-C handler that asks the loop to stop cleanly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use mentor_trainer::eval::EvalRow;
use mentor_trainer::train::{Progress, StepRecord};

/// A progress bar on stderr (hidden when stderr is not a terminal or `visible` is false;
/// notes and evaluations are still printed as lines).
pub struct Bar {
    pb: ProgressBar,
    visible: bool,
    name: String,
}

impl Bar {
    /// A bar for a run of `total` steps.
    pub fn new(name: &str, total: usize, visible: bool) -> Self {
        let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let pb = ProgressBar::with_draw_target(Some(total as u64), target);
        pb.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb.set_prefix(name.to_string());
        Self { pb, visible, name: name.to_string() }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }

    fn line(&self, s: &str) {
        if self.visible && !self.pb.is_hidden() {
            self.pb.println(s);
        } else {
            eprintln!("{s}");
        }
    }
}

impl Progress for Bar {
    fn step(&mut self, r: &StepRecord, _total: usize) {
        self.pb.set_position(r.step as u64 + 1);
        self.pb.set_message(format!(
            "L{} reward {:.2} zrf {:.2} hinted {} rescued {}",
            r.level, r.strategy.mean_reward, r.strategy.zrf, r.strategy.intervened, r.strategy.rescued
        ));
    }

    fn eval(&mut self, rows: &[EvalRow]) {
        for r in rows {
            let k = r.passk.map(|p| format!(" pass@{} {p:.3}", r.k)).unwrap_or_default();
            let level = match (&r.set, r.level) {
                (Some(name), _) => format!(" {name}"),
                (None, l) if l > 0 => format!(" L{l}"),
                _ => String::new(),
            };
            self.line(&format!(
                "{}: eval step {}{level}: pass@1 {:.3}{k} (n={})",
                self.name, r.step, r.pass1, r.n
            ));
        }
    }

    fn note(&mut self, message: &str) {
        self.line(&format!("{}: {message}", self.name));
    }
}

/// Installs a Ctrl-C (and SIGTERM) handler: the first signal sets the returned flag (the
/// loop checkpoints and stops after the current step); a second one exits at once, which is
/// safe because every file is written atomically.
pub fn stop_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let installed = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\nsecond interrupt: exiting now (the last checkpoint is intact)");
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: finishing this step and saving a checkpoint (Ctrl-C again to quit now)");
    });
    if let Err(e) = installed {
        eprintln!(
            "warning: cannot install the Ctrl-C handler ({e}); an interrupt will stop without a checkpoint"
        );
    }
    flag
}
