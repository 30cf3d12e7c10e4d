"""The report's frame: the environment section (machines, framework
environments, package lists), the metadata table and the "Reproduce" section."""
from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from .. import __version__ as FRAMEVAL_VERSION
from . import fmt
from .audit import precision_text
from ..catalog import BY_KEY
from ..result import as_dict
from .spec import framework_name


def git_commit(repo: Path):
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# ------------------------------------------------------------------ environment
def machines(rows, S) -> list:
    found = {}
    for w in rows:
        env = w.result.environment
        m = as_dict(env.get("machine"))
        host = str(m.get("hostname") or fmt.NA)
        e = found.setdefault(host, {"host": host, "cpu": m.get("cpu"), "cores": m.get("cores"),
                                    "memory_gb": m.get("memory_gb"), "os": m.get("os"), "gpus": set(), "drivers": set()})
        gpu = env.get("gpu")
        if isinstance(gpu, dict):
            if gpu.get("name"):
                e["gpus"].add(str(gpu["name"]))
            if gpu.get("driver"):
                e["drivers"].add(str(gpu["driver"]))
        elif gpu:
            e["gpus"].add(str(gpu))
        for k in ("gpu_driver", "driver"):
            if env.get(k):
                e["drivers"].add(str(env[k]))
    return [{"host": m["host"], "cpu": str(m["cpu"] or fmt.NA), "cores": fmt.integer(m["cores"]),
             "memory": (fmt.sig(m["memory_gb"]) + " GB") if fmt.num(m["memory_gb"]) is not None else fmt.NA,
             "gpu": ", ".join(sorted(m["gpus"])) or S("none"), "driver": ", ".join(sorted(m["drivers"])) or fmt.NA,
             "os": str(m["os"] or fmt.NA)} for m in found.values()]


def _recorded(frows, key):
    return {str(w.result.environment.get(key)) for w in frows if w.result.environment.get(key)}


def _user_env(frows, elist, version, S) -> str:
    """"provided by the user", with the version that ran beside the spec's pin,
    when an environment came from `--python FW=...`; "" otherwise."""
    recorded = [w.result.environment for w in frows]
    if not any(e.get("provided_by_user") for e in recorded) and \
            not any(e.get("provided_by_user") or e.get("backend") == "user" for e in elist):
        return ""
    pins = {str(e["spec_pin"]) for e in [*recorded, *elist] if e.get("spec_pin")}
    pythons = {str(e["python_executable"]) for e in recorded if e.get("python_executable")}
    return S("env_user_provided", version=version, pin=", ".join(sorted(pins)) or fmt.NA,
             python=", ".join(sorted(pythons)) or fmt.NA)


def framework_env(fw, rows, elist, S) -> dict:
    frows = [w for w in rows if w.fw == fw]
    pys = _recorded(frows, "python") | {str(e["python"]) for e in elist if e.get("python")}
    threads = sorted({str(w.result.threads) for w in frows if w.result.threads is not None})
    packages, specs = [], []
    names = BY_KEY[fw].packages if fw in BY_KEY else (fw,)
    for e in elist:
        for line in str(e.get("freeze") or "").splitlines():
            pkg = line.split("==")[0].split(" @ ")[0].strip().lower()
            if pkg in names or any(pkg.startswith(n + "-") for n in names):
                packages.append(line.strip())
        specs.append(" ".join(x for x in (str(e.get("spec_name") or ""), f"({e['backend']})" if e.get("backend") else "") if x))
    version = ", ".join(sorted({str(w.version) for w in frows if w.version})) or fmt.NA
    user = _user_env(frows, elist, version, S)
    stacks = sorted({gpu_stack(w.result.environment) for w in frows} - {""})
    if stacks:  # a GPU run's CUDA and cuDNN, as the framework reported them
        version += f" ({'; '.join(stacks)})"
    return {"math_mode": math_modes(frows, S), "fw": fw, "name": framework_name(fw), "version": version, "user_provided": bool(user),
            "python": ", ".join(sorted(pys)) or fmt.NA, "numpy": ", ".join(sorted(_recorded(frows, "numpy"))) or fmt.NA,
            "packages": ", ".join(sorted(set(packages))) or fmt.NA, "threads": ", ".join(threads) or fmt.NA,
            "spec": "; ".join(x for x in [user or "; ".join(specs) or S("env_not_recorded"), *(
                S("env_offline", bundle=b) for b in sorted(_recorded(frows, "offline_bundle")))] if x),
            "key": ", ".join(str(e.get("key")) for e in elist if e.get("key")) or fmt.NA}


def _cuda(v) -> str:
    """CUDA's version as a person writes it: XLA's "cuda 13000" and the runtime's
    13000 (1000 x major + 10 x minor) read "13.0"; torch's "13.0" stays."""
    t = str(v).strip().removeprefix("cuda").strip()
    return f"{int(t) // 1000}.{int(t) % 1000 // 10}" if t.isdigit() and int(t) >= 1000 else t


def _cudnn(v) -> str:
    """cuDNN's version number as major.minor.patch: 91900 (9.x: 10000 x major + 100 x minor
    + patch) reads "9.19.0", 8902 (8.x: 1000 x major + 100 x minor + patch) "8.9.2"."""
    t = str(v).strip()
    if not t.isdigit():
        return t
    n = int(t)
    if n >= 90000:
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}" if n >= 1000 else t


def gpu_stack(env: dict) -> str:
    """ "CUDA 13.0, cuDNN 9.19.0" from a result's environment, as the framework
    reported them; the runtime's CUDA only where it differs; "" where none was recorded."""
    parts = []
    cuda = _cuda(env["cuda"]) if env.get("cuda") else ""
    if cuda:
        parts.append(f"CUDA {cuda}")
    if env.get("cuda_runtime") and _cuda(env["cuda_runtime"]) != cuda:
        parts.append(f"CUDA runtime {_cuda(env['cuda_runtime'])}")
    if env.get("cudnn"):
        parts.append(f"cuDNN {_cudnn(env['cudnn'])}")
    return ", ".join(parts)


def math_modes(frows, S) -> str:
    """Each run's float32 arithmetic as read back (nb/precision.py): one phrase where
    all the framework's runs share it, else per run."""
    texts = {w.label: precision_text(w.result, S) for w in frows}
    if len(set(texts.values())) <= 1:
        return next(iter(texts.values()), fmt.NA)
    return "; ".join(f"{label}: {t}" for label, t in texts.items())


def env_label(fw, e, elist) -> str:
    """The framework's name, with its pinned version where it has several
    environments (--frameworks paddle==3.2.2,paddle: "PaddlePaddle 3.2.2")."""
    pin = str(e.get("spec_pin") or "")
    if len(elist or []) > 1 and "==" in pin:
        return f"{framework_name(fw)} {pin.split('==', 1)[1].split(';')[0].strip()}"
    return framework_name(fw)


def environment(rows, envs, frameworks, S):
    freezes = []
    for fw in frameworks:
        for e in envs.get(fw) or []:
            text = str(e.get("freeze") or "").strip()
            freezes.append({"name": env_label(fw, e, envs.get(fw)), "spec": str(e.get("spec_name") or fw), "text": text,
                            "raw": str(e.get("freeze") or ""),
                            "n": len([x for x in text.splitlines() if x.strip()]), "fence": fmt.fence(text or fmt.NA)})
    return {"machines": machines(rows, S), "frameworks": [framework_env(fw, rows, envs.get(fw) or [], S) for fw in frameworks],
            "freezes": freezes}


# ------------------------------------------------------------------ metadata
def metadata(request, rows, plans, env, frameworks, multi_host, S, now) -> list:
    plan = plans[0] if plans else {}
    commit = plan.get("git_commit") or git_commit(request["repo"])
    versions = []
    for fw in frameworks:
        vs = sorted({str(w.version) for w in rows if w.fw == fw and w.version})
        versions.append(f"{framework_name(fw)} {', '.join(vs) if vs else fmt.NA}")
    devices = []
    for m in env.get("machines") or []:
        d = f"{m['cpu']} ({S('cores', n=m['cores'])})" + (f"; GPU {m['gpu']}" if m["gpu"] != S("none") else "")
        devices.append((f"{m['host']}: " if multi_host else "") + d)
    n_failed = len([w for w in rows if not w.ok])
    n_check = len([w for w in rows if w.check_failed])
    meta = [(S("meta_title"), request["title"]), (S("meta_author"), request["author"] or fmt.NA),
            (S("meta_date"), now.strftime("%Y-%m-%d %H:%M %Z").strip()),
            (S("meta_frameval"), f"{plan.get('frameval_version') or FRAMEVAL_VERSION}"
             + (f" ({S('commit')} {commit}" + (f", {S('meta_dirty')}" if _dirty(request) else "") + ")" if commit else "")),
            (S("meta_frameworks"), S.join(versions) or fmt.NA), (S("meta_device"), "; ".join(devices) or fmt.NA),
            (S("meta_runs"), S("meta_runs_value", n=len(rows), ok=len(rows) - n_failed - n_check, failed=n_failed)
             + (" " + S("meta_runs_check", n=n_check) if n_check else ""))]
    for key, label in (("profile", "meta_profile"), ("started", "meta_started")):
        if plan.get(key):
            meta.append((S(label), profile_text(plan, S) if key == "profile" else str(plan[key])))
    if plan.get("overrides"):
        meta.append((S("meta_overrides"), fmt.value(plan["overrides"])))
    meta.append((S("meta_sources"), ", ".join(Path(s).name or s for s in request["sources"]) or fmt.NA))
    return meta


def _dirty(request) -> bool:
    """Whether the first source's provenance says its clone differed from the commit
    (the metadata says so beside the commit; "Reproduce" names the files)."""
    found = first_provenance(request.get("sources") or [])
    return bool(as_dict(found[1].get("frameval")).get("dirty")) if found else False


def first_provenance(sources):
    """(folder, provenance.json) of the first source that has one, or None."""
    from ..provenance import read
    return next(((Path(src), p) for src in sources if (p := read(src))), None)


def profile_text(plan, S) -> str:
    """The profile's name; the full profile on the embedded subset says so."""
    if plan.get("profile") == "full" and "embedded" in (plan.get("datasets") or []):
        return f"full ({S('profile_full_embedded')})"
    return str(plan["profile"])


# ------------------------------------------------------------------ reproduce
def collect_command(sources, out_dir, lang, name, title, author, notes_file, repo) -> str:
    """The papermill line that reruns only the collector on the same folders."""
    def rel(p):
        p = Path(p).resolve()
        try:
            return str(p.relative_to(Path(repo).resolve()))
        except ValueError:
            return str(p)
    params = {"sources": [rel(s) for s in sources], "out_dir": rel(out_dir), "lang": lang, "name": name}
    for k, v in (("title", title), ("author", author)):
        if v:
            params[k] = v
    if notes_file:
        params["notes_file"] = rel(notes_file)
    return (f"papermill notebooks/collect.ipynb {shlex.quote(rel(Path(out_dir) / (name + '-collect.ipynb')))} "
            f"-y {shlex.quote(json.dumps(params, ensure_ascii=False))}")


def env_specs(frameworks, envs, repo: Path) -> list:
    specs = []
    for fw in frameworks:
        es = envs.get(fw) or []
        for e in es:
            text = str(e.get("spec_text") or "")
            specs.append({"name": env_label(fw, e, es), "spec": str(e.get("spec_name") or e.get("spec_path") or fw),
                          "text": text, "fence": fmt.fence(text or fmt.NA, "yaml"), "recorded": True})
        p = Path(repo) / "envs" / f"{fw}.yml"
        if not es and p.is_file():
            t = p.read_text(encoding="utf-8")
            specs.append({"name": framework_name(fw), "spec": f"envs/{fw}.yml", "text": t,
                          "fence": fmt.fence(t, "yaml"), "recorded": False})
    return specs


def reproduce(request, plans, frameworks, envs, S=None) -> dict:
    plan = plans[0] if plans else {}
    collect = collect_command(request["sources"], request["out_dir"], request["lang"], request["name"], request["title_arg"], request["author"],
                              request["notes_file"], request["repo"])
    command = request["command"] or plan.get("command") or collect
    pc = plan.get("command") if plan.get("command") and plan.get("command") != command else ""
    return {"command": command, "command_fence": fmt.fence(command or fmt.NA, "bash"), "plan_command": pc,
            "plan_fence": fmt.fence(pc or "", "bash"), "collect": collect,
            "specs": env_specs(frameworks, envs, request["repo"]),
            "provenance": provenance_view(request["sources"], S) if S else None}


def _short(h) -> str:
    return str(h)[:12] if h else fmt.NA


def provenance_view(sources, S) -> dict | None:
    """The first source's provenance.json as the "Reproduce" section shows it (None where none has one)."""
    from ..provenance import framework_version
    found = first_provenance(sources)
    if not found:
        return None
    folder, p = found
    fv = as_dict(p.get("frameval"))
    commit = str(fv.get("commit") or fmt.NA)
    state = (S("prov_dirty", n=len(fv.get("changed") or []), files=", ".join((fv.get("changed") or [])[:8]))
             if fv.get("dirty") else S("prov_clean") if fv.get("dirty") is False else S("prov_unknown"))
    envs = []
    for name, e in sorted(as_dict(p.get("environments")).items()):
        e, lock = as_dict(e), as_dict(as_dict(e).get("lock"))
        how = (S("prov_locked", file=lock.get("file"), sha=_short(lock.get("sha256"))) if lock.get("state") == "locked"
               else S("prov_unlocked", why=lock.get("why") or fmt.NA))
        local = [f"{x.get('package')} {x.get('version')}" for x in lock.get("local") or [] if isinstance(x, dict)]
        if local:
            how += " " + S("prov_local", pkgs=", ".join(local))
        # The version read again from the freeze: a provenance.json written
        # before the fix holds a companion package's (flax's as JAX's).
        version = framework_version(name.partition("@")[0], str(e.get("freeze") or "")) or e.get("framework_version")
        envs.append({"name": name, "spec": str(e.get("spec") or fmt.NA), "version": str(version or fmt.NA),
                     "lock": how, "freeze": _short(e.get("freeze_sha256"))})
    data = [{"name": n, "file": str(as_dict(d).get("file") or fmt.NA), "sha": _short(as_dict(d).get("sha256"))}
            for n, d in sorted(as_dict(p.get("data")).items())]
    m = as_dict(p.get("machine"))
    c = as_dict(m.get("cpu"))
    caps = ", ".join(f"{k}={v}" for k, v in as_dict(m.get("caps")).items()) or S("none")
    gpus = ", ".join(f"{g.get('name')} ({g.get('driver')})" for g in m.get("gpus") or [] if isinstance(g, dict))
    runs = as_dict(p.get("plan")).get("runs") or []
    seeds = sorted({str(r.get("seed")) for r in runs if isinstance(r, dict) and r.get("seed") is not None})
    plan = as_dict(p.get("plan"))
    return {"commit": commit, "state": state, "command": str(as_dict(p.get("command")).get("line") or fmt.NA),
            "checkout": f"git checkout {commit}", "envs": envs,
            "reproduce": f"python3 run_all.py reproduce {shlex.quote(str(folder))}", "data": data, "file": str(folder / "provenance.json"),
            "machine": S("prov_machine", cpu=c.get("model") or fmt.NA, cores=c.get("cores") or fmt.NA,
                         isa=" ".join(c.get("isa") or []) or fmt.NA, caps=caps, gpu=gpus or S("none")),
            "plan": S("prov_plan", n=len(runs), repeats=plan.get("repeats") or 1, seeds=", ".join(seeds) or fmt.NA,
                      profile=plan.get("profile") or fmt.NA)}
