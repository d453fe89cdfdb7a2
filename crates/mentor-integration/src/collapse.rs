//! The one rule that says whether a group failed: [`is_collapsed`]. It sits below the groups
//! that apply it to their verdicts (`rollout.rs`) and the monitor that counts collapses.

/// Whether a group of attempts collapsed: **no attempt passed**. `passed` holds each attempt's
/// binary correctness ([`Verdict::passed`](mentor_core::Verdict::passed)), never a shaped
/// reward. An empty group counts as collapsed (nothing in it passed); the plug-in never forms
/// one.
///
/// This is the one predicate that decides "collapsed" and its converse "rescued" everywhere:
/// the collapse monitor (so the training loop's choice of groups to intervene on), the
/// plug-in's rescue test of a hinted group (rescued = the hinted group is not collapsed), the
/// rescue study, and Python (`mentor_rl.is_collapsed`, `mentor_rl.CollapseMonitor`, and
/// `MentorGRPOTrainer`, which feeds it the verdicts of the reward function named by
/// `Intervention(correctness=...)`).
///
/// ```
/// use mentor_integration::is_collapsed;
///
/// assert!(is_collapsed([false, false, false]));
/// assert!(!is_collapsed([false, true, false]));
/// ```
pub fn is_collapsed(passed: impl IntoIterator<Item = bool>) -> bool {
    !passed.into_iter().any(|p| p)
}
