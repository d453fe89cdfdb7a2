//! Loads a benchmark file and prints how many tasks it holds and the first one as JSON.
//!
//! `cargo run -p mentor-core --example load -- gsm8k ../shared/datasets/gsm8k/test.jsonl`

use mentor_core::datasets::Dataset;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(name), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: load <gsm8k|math500|humaneval|mbpp|aime2024|amc2023> FILE");
        std::process::exit(2);
    };
    let Some(dataset) = Dataset::from_name(name) else {
        eprintln!("unknown dataset `{name}`");
        std::process::exit(2);
    };
    match dataset.load(std::path::Path::new(path)) {
        Ok(tasks) => {
            println!("{} tasks", tasks.len());
            if let Some(first) = tasks.first() {
                println!("{}", serde_json::to_string_pretty(first).unwrap_or_default());
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
