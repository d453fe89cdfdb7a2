//! The progress bar of a measurement (`rescue`, `probe`).

use indicatif::ProgressBar;

/// Progress of a measurement (`rescue`, `probe`): the phase and the rows generated.
pub(crate) fn bar(visible: bool, name: &str) -> ProgressBar {
    use indicatif::{ProgressDrawTarget, ProgressStyle};
    let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let pb = ProgressBar::with_draw_target(Some(0), target);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{name} {{msg}} [{{bar:30}}] {{pos}}/{{len}} rows {{elapsed_precise}} eta {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb
}
