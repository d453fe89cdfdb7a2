//! The rescue report: a plain table for the terminal, `report.md`, and `rescue.svg` (rescue
//! rate per arm with its 95% interval, in the house style of [`crate::report`]).

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::records::{ArmSummary, RescueSummary, CHART_FILE, RESCUE_FILE};

/// `mentor L2`, `llm esc`, `retry`. The `rules` mentor's escalation is named for what it is:
/// its tutor ignores the earlier hints and the prompt carries only the current one, so the row
/// is the best of three levels (`mentor best of 3 levels`), not a conversation that escalates.
pub fn label(arm: &str, level: Option<u8>) -> String {
    let leveled = matches!(
        arm,
        "mentor" | "llm" | "local" | "mentor_no_wrong_op" | "random_step" | "prior_step" | "all_steps"
    );
    match (leveled, level) {
        (true, Some(l)) => format!("{arm} L{l}"),
        (true, None) if arm == "mentor" => "mentor best of 3 levels".to_string(),
        (true, None) => format!("{arm} esc"),
        _ if arm == "retry_fixed" => "retry (3 rounds)".to_string(),
        _ => arm.to_string(),
    }
}

fn diff(d: Option<[f64; 3]>) -> String {
    match d {
        Some([d, lo, hi]) => format!("{d:+.3} [{lo:+.3}, {hi:+.3}]"),
        None => "–".into(),
    }
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "–".into(), |v| format!("{v:.decimals$}"))
}

fn cells(a: &ArmSummary, collapsed: usize) -> Vec<String> {
    let mut name = label(&a.arm, a.level);
    if a.leaking {
        name.push_str(" (leaks: bound, not a method)");
    }
    vec![
        name,
        format!("{}/{}", a.rescued, collapsed - a.excluded),
        format!("{:.3} [{:.3}, {:.3}]", a.rescue_rate, a.rescue_ci[0], a.rescue_ci[1]),
        opt(a.hinted_pass_rate, 3),
        diff(a.diff_vs_retry),
        diff(a.diff_vs_static),
        diff(a.diff_vs_wrong_answers),
        diff(a.diff_vs_random_prefix),
        diff(a.diff_vs_where_only),
        a.leaks.to_string(),
        a.guard_rejections.to_string(),
        opt(a.mean_hint_tokens, 1),
        reliance(a.reliance),
        opt(a.mentor_seconds.map(|s| s * 1000.0), 2),
    ]
}

/// `mean ± sd (n)`.
fn reliance(r: Option<[f64; 3]>) -> String {
    r.map_or_else(|| "–".into(), |[m, sd, n]| format!("{m:+.2} ± {sd:.2} ({n})"))
}

const HEADER: [&str; 14] = [
    "arm",
    "rescued",
    "rescue rate [95% CI]",
    "hinted pass",
    "Δ vs retry [95% CI]",
    "Δ vs static [95% CI]",
    "Δ vs wrong_answers",
    "Δ vs random_prefix",
    "Δ vs where_only",
    "leaks",
    "guard rej.",
    "hint tokens",
    "reliance",
    "mentor ms",
];

/// The arms table as aligned plain text.
pub fn table(s: &RescueSummary) -> String {
    let rows: Vec<Vec<String>> = std::iter::once(HEADER.iter().map(|h| h.to_string()).collect())
        .chain(s.arms.iter().map(|a| cells(a, s.collapsed)))
        .collect();
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Peak memory in words: `peak RSS 11.20 GiB, peak live heap 3.10 GiB (unhinted pass 2.00,
/// hinted rounds 3.10)`.
pub fn memory_line(m: &super::records::MemoryPeaks) -> String {
    let gib =
        |v: Option<f64>| v.map_or_else(|| "not measured".to_string(), |v| format!("{:.2} GiB", v / 1024.0));
    let mut line = format!("peak RSS {}, peak live heap {}", gib(m.rss_mib), gib(m.live_mib));
    if let (Some(u), Some(h)) = (m.unhinted_live_mib, m.hinted_live_mib) {
        line.push_str(&format!(" (unhinted pass {:.2}, hinted rounds {:.2})", u / 1024.0, h / 1024.0));
    }
    line
}

fn md_table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

/// `report.md`.
pub fn markdown(s: &RescueSummary) -> String {
    let mut out = String::from("# Rescue measurement\n\n");
    out.push_str(&format!(
        "Learner `{}` on `{}` (stratum: {}; prompt: {}): {} problems sampled without hints, G = {} attempts each at temperature {}, \
         at most {} new tokens; unhinted pass rate {:.3}. **{} problems collapsed** (no attempt passed); \
         every arm below was measured on each of them with G' = {} hinted attempts per round whose seeds depend only on the \
         problem and the attempt's index (paired). Level-3 prefixes reach the learner under `{}` credit. \
         {} rows, {} tokens generated in {:.0} s ({:.0} s unhinted).\n\n",
        s.model,
        s.data,
        s.regime.stratum.as_deref().unwrap_or("all"),
        if s.regime.prompt.is_empty() { "system" } else { &s.regime.prompt },
        s.problems,
        s.unhinted_samples,
        s.temperature,
        s.max_new_tokens,
        s.base_pass_rate,
        s.collapsed,
        s.group_size,
        s.credit,
        s.rows,
        s.tokens,
        s.seconds,
        s.base_seconds
    ));
    out.push_str(&md_table(&HEADER, s.arms.iter().map(|a| cells(a, s.collapsed))));
    for f in &s.fallbacks {
        out.push_str(&format!(
            "\n`{}`: {} of its {} asks' model calls (a diagnosis and a hint per ask) were answered by the `rules` \
             agents instead (an unparseable reply or a model error); its hints are partly the rules mentor's.\n",
            f.arm, f.fallbacks, f.asks
        ));
    }
    if let Some(m) = &s.memory {
        out.push_str(&format!("\nMemory: {}.\n", memory_line(m)));
    }
    out.push_str(&format!("\n![rescue rate per arm]({CHART_FILE})\n\n"));
    out.push_str("## By diagnosis category\n\n");
    out.push_str(
        "Problems grouped by the `rules` diagnosis of their failed attempts; rescue rate and the paired \
         difference to `retry` per arm.\n\n",
    );
    for c in &s.by_category {
        out.push_str(&format!("### `{}` (n = {})\n\n", c.category, c.n));
        out.push_str(&md_table(
            &["arm", "rescue rate", "Δ vs retry [95% CI]", "Δ vs static [95% CI]", "reliance"],
            c.arms.iter().map(|a| {
                vec![
                    label(&a.arm, a.level),
                    format!("{:.3}", a.rescue_rate),
                    diff(a.diff_vs_retry),
                    diff(a.diff_vs_static),
                    reliance(a.reliance),
                ]
            }),
        ));
        out.push('\n');
    }
    out.push_str(&format!(
        "## How to read it\n\n\
         - **rescue rate**: collapsed problems with at least one successful hinted attempt out of G, over all \
         collapsed problems (an arm that showed no hint — every candidate rejected by the guard — did not \
         rescue); Wilson 95% interval. **hinted pass**: successful hinted attempts of all sampled.\n\
         - **Δ**: the mean over problems of (arm rescued − other arm rescued), with a paired bootstrap 95% \
         interval (problems resampled, the same resamples for every arm). An interval that contains 0 is no \
         evidence of a difference.\n\
         - `retry` shows nothing: its G fresh samples are the base rate of simply trying again; being \
         collapsed is partly bad luck, so `retry` rescues some problems on its own.\n\
         - `mentor esc` escalates 1 → 2 → 3 while every hinted attempt fails, so it draws up to 3G attempts \
         per problem against the others' G: compare it with that in mind.\n\
         - `random_prefix` is the level-3 control, matched in size: the mentor's level-3 template with the \
         reference cut at the other step boundary whose hint is nearest in tokens to the mentor's; it had such \
         a cut on {} of {} problems, and the others (too few steps for another cut, or level 3 showed no \
         prefix) are left out of its rate and of every difference against it. Mean hint tokens, mentor \
         level 3 against the control on those problems, and the mean absolute difference: {}.\n\
         - **reliance**: for each rescued hinted attempt, its mean token log-prob without the hint minus \
         with it (teacher-forced, temperature 1; a forced prefix is context on both sides); `mean ± sd (n)`. \
         Near 0: the learner writes that success almost as readily without the hint, so training on it moves \
         the unhinted policy; strongly negative: the success leans on the hint.\n\
         - `wrong_answers` says only which final answers were wrong (code: which tests failed); `where_only` \
         only where the diagnosis puts the first mistake and what kind it is. Against them, a diagnosed hint \
         shows what the diagnosis's content adds. `retry (esc attempts)` draws as many attempts per problem as \
         `mentor esc` did. `reference_in_context` shows the whole reference: a bound for scale, never a method.\n\
         - **leaks**: accepted hints from which the verifier alone (math checker, or the code sandbox and the \
         reference-overlap check) reads a correct answer. **guard rej.**: hints the guard refused.\n\
         - A rescue is not transfer: it shows the *hinted* attempt succeeds more often. Whether training on \
         rescued groups raises *unhinted* accuracy is what a training run (`mentor train`, `mentor report`) \
         measures.\n\n\
         Every intervention (problem, diagnosis, hints, hinted attempts and rewards) is in `{RESCUE_FILE}`.\n",
        s.random_prefix_distinct,
        s.collapsed,
        s.random_prefix_size
            .map_or_else(|| "–".to_string(), |[m, c, d]| format!("{m:.1} against {c:.1} (mean |Δ| {d:.1})"))
    ));
    out
}

fn color(arm: &str) -> RGBColor {
    let name = if arm == "retry" { "vanilla" } else { arm };
    let (r, g, b) = crate::report::arm_color(name);
    RGBColor(r, g, b)
}

/// `rescue.svg`: one bar per arm row (rescue rate) with its Wilson 95% interval.
pub fn chart_svg(s: &RescueSummary) -> Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let labels: Vec<String> = s.arms.iter().map(|a| label(&a.arm, a.level)).collect();
    let n = labels.len().max(1) as i32;
    let top = s.arms.iter().map(|a| a.rescue_ci[1]).fold(0.05_f64, f64::max).min(1.0) * 1.1;
    let mut svg = String::new();
    {
        let width = (140 * n as u32).clamp(720, 1600);
        let root = SVGBackend::with_string(&mut svg, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Rescue rate per arm ({} collapsed problems, G = {}, 95% CI)",
                    s.collapsed, s.group_size
                ),
                ("sans-serif", 22),
            )
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top)
            .map_err(|e| err(&e))?;
        let fmt = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                labels.get(*i as usize).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_labels(labels.len())
            .x_label_formatter(&fmt)
            .y_desc("rescue rate (≥ 1 success in G)")
            .light_line_style(RGBColor(236, 236, 236))
            .axis_desc_style(("sans-serif", 18))
            .label_style(("sans-serif", 14))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, a) in s.arms.iter().enumerate() {
            let i = i as i32;
            let c = color(&a.arm);
            let mut bar = Rectangle::new(
                [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), a.rescue_rate)],
                c.mix(0.85).filled(),
            );
            bar.set_margin(0, 0, 14, 14);
            ctx.draw_series(std::iter::once(bar)).map_err(|e| err(&e))?;
            let whisker = ShapeStyle { color: BLACK.to_rgba(), filled: false, stroke_width: 2 };
            let x = SegmentValue::CenterOf(i);
            ctx.draw_series(std::iter::once(PathElement::new(
                vec![(x.clone(), a.rescue_ci[0]), (x.clone(), a.rescue_ci[1])],
                whisker,
            )))
            .map_err(|e| err(&e))?;
            let font = ("sans-serif", 14).into_font().color(&BLACK);
            ctx.draw_series(std::iter::once(Text::new(
                format!(" {:.2}", a.rescue_rate),
                (x, a.rescue_ci[1]),
                font,
            )))
            .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(name: &str, level: Option<u8>, rate: f64) -> ArmSummary {
        ArmSummary {
            arm: name.into(),
            level,
            rescue_rate: rate,
            rescue_ci: [rate / 2.0, (rate * 1.5).min(1.0)],
            hinted_pass_rate: Some(rate / 3.0),
            leaks: 0,
            guard_rejections: 1,
            diff_vs_retry: Some([rate - 0.1, rate - 0.2, rate]),
            diff_vs_static: None,
            diff_vs_wrong_answers: None,
            diff_vs_random_prefix: None,
            diff_vs_where_only: None,
            rescued: (rate * 10.0) as usize,
            hinted: 10,
            excluded: 0,
            leaking: false,
            reliance: None,
            samples: 20,
            mean_hint_tokens: Some(12.5),
            hint_tokens: Some(12.5),
            mentor_seconds: Some(0.002),
        }
    }

    fn summary() -> RescueSummary {
        RescueSummary {
            diagnosed_steps: Default::default(),
            prior_steps: None,
            collapsed: 10,
            base_pass_rate: 0.05,
            arms: vec![arm("retry", None, 0.1), arm("mentor", Some(2), 0.4), arm("mentor", None, 0.5)],
            by_category: vec![],
            problems: 12,
            group_size: 2,
            unhinted_samples: 4,
            regime: Default::default(),
            temperature: 1.0,
            max_new_tokens: 64,
            model: "smollm2".into(),
            data: "gsm8k:train".into(),
            credit: "prefix".into(),
            random_prefix_distinct: 3,
            fallbacks: Vec::new(),
            random_prefix_size: Some([40.0, 38.0, 4.5]),
            rows: 100,
            tokens: 4000,
            seconds: 12.0,
            base_seconds: 3.0,
            memory: None,
            dir: "x".into(),
        }
    }

    #[test]
    fn tables_label_levels_and_show_intervals() {
        let s = summary();
        let t = table(&s);
        assert!(
            t.contains("mentor L2") && t.contains("mentor best of 3 levels") && t.contains("retry"),
            "{t}"
        );
        assert!(t.contains("0.400 [0.200, 0.600]") && t.contains("+0.300 [+0.200, +0.400]"), "{t}");
        assert_eq!(t.lines().count(), 4);
        let md = markdown(&s);
        assert!(md.contains("**10 problems collapsed**") && md.contains("rescue.svg"), "{md}");
        assert!(md.contains("| mentor best of 3 levels | 5/10 |"), "{md}");
    }

    #[test]
    fn the_chart_has_a_bar_and_a_whisker_per_arm() {
        let svg = chart_svg(&summary()).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
        // The background and one bar per arm.
        assert!(rects > 3, "{rects}");
        assert!(svg.contains("mentor L2") && svg.contains("mentor best of 3 levels"), "{svg}");
    }
}
