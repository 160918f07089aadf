"""servers: the server definitions (servers/NAME.toml and the folders of SERVER_DEFS) and the
comparison pairs (runner/default-pairs.toml, or a --pairs file): the one place a server and
the default matrix are described (servers/README.md gives the keys).
Reads files only; never starts a server. Every error is a DefinitionError whose message names
the file, so that a caller can print it as a usage error.
"""
import hashlib
import os
import re
import tomllib

NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
SCENARIOS = ("s1", "s2", "s3", "s4")
# The mix file of each scenario (loadgen-scripts/): s4 is s3's traffic on a SQLite store.
MIXES = {"s1": "s1_ping.mix", "s2": "s2_user_get.mix", "s3": "s3_mixed.mix", "s4": "s3_mixed.mix"}
PLACEHOLDERS = ("root", "build", "host", "port", "threads", "db", "bearer", "seed_users", "access_log",
                "run_dir")
SIGNALS = ("TERM", "INT", "QUIT", "HUP", "USR1", "USR2")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIELD_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
KEYS = {"command", "scenarios", "description", "ready_path", "env", "stop_signal", "build", "env_args",
        "version", "build_command", "url"}
URL_RE = re.compile(r"^http://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})$")
BUILD_PLACEHOLDERS = ("root", "build")   # the only ones a build_command may use
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PAIRS = os.path.join(ROOT, "runner", "default-pairs.toml")
# A scenario of one's own: a mix file (loadgen-scripts/README.md) named "mix:PATH" (in a
# definition's scenarios, relative to its folder; in --scenarios, to the working directory);
# its name is the file's stem. SCENARIO_MIXES (mix files, ':'-separated) lists those a batch
# named, for the runs it starts. The contract routes each mix kind needs (verify.MixLine.kind).
MIX_PREFIX = "mix:"
KIND_SCENARIO = {"ping": "s1", "user": "s2", "list": "s3", "create": "s3"}
_CUSTOM = {}   # name -> absolute mix path, of every mix scenario met (register_mix)
# Scenarios that decide a pair's overall verdict when the pairs file does not say.
DECIDING = ("s1", "s2")


class DefinitionError(ValueError):
    """A definition or pairs file that cannot be used; the message names the file."""


class Server:
    """One server definition, checked: name, path, command (list of str), scenarios (list),
    description, ready_path, env (dict str -> str), stop_signal, build (list of binary names),
    build_command (list of str: how to build a server from elsewhere, or None), url (a
    server already running, with no command: "http://HOST:PORT", or None),
    env_args (dict variable -> list of str), version (list of str: a command that prints the
    server's version, or None)."""

    def __init__(self, name, path, doc):
        self.name, self.path = name, path
        self.command = doc.get("command", [])
        self.url = doc.get("url")   # a server already running: no command, never started here
        base = os.path.dirname(os.path.abspath(path))
        self.scenarios = [register_mix(*mix_scenario(s, base)) if s.startswith(MIX_PREFIX) else s
                          for s in doc["scenarios"]]
        self.description = doc.get("description", "")
        self.ready_path = doc.get("ready_path", "/ping")
        self.env = doc.get("env", {})
        self.stop_signal = doc.get("stop_signal", "TERM")
        self.build = doc.get("build", [])
        self.env_args = doc.get("env_args", {})
        self.version = doc.get("version")
        self.build_command = doc.get("build_command")

    def serves(self, scenario):
        """True when it lists SCENARIO, or SCENARIO is a mix scenario (custom_mix) whose every
        request kind a scenario it lists covers (KIND_SCENARIO: s1 /ping, s2 GET /users/ID,
        s3 the list and POST): the contract check is then limited to the routes the mix uses."""
        if scenario in self.scenarios:
            return True
        path = custom_mix(scenario)
        if path is None:
            return False
        need = {KIND_SCENARIO.get(k) for k in mix_kinds(path)}
        return None not in need and need <= set(self.scenarios)

    def uses(self, placeholder):
        """True when the command, env or env_args hold {PLACEHOLDER}."""
        texts = list(self.command) + list(self.env.values()) + [a for v in self.env_args.values() for a in v]
        return any(m.group(1) == placeholder for t in texts for m in FIELD_RE.finditer(t))

    @property
    def store(self):
        """The store its runs use, for config.store: "sqlite" when it takes {db} (a fresh SQLite
        file per run), "memory" when it serves s3 (the mixed traffic on a memory store) or is
        one of ours (build), else None (a server with no store the contract can see)."""
        if self.uses("db"):
            return "sqlite"
        return "memory" if self.serves("s3") or self.build else None

    def sha256(self):
        """The hex SHA-256 of the definition file as read now."""
        with open(self.path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()


def mix_scenario(token, base=None):
    """(name, absolute path) of the mix scenario TOKEN ("mix:PATH", PATH relative to BASE or
    the working directory). DefinitionError when the file is missing or its stem is not a
    name (NAME_RE) or is one of SCENARIOS."""
    rel = token[len(MIX_PREFIX):]
    path = os.path.abspath(os.path.join(base or os.getcwd(), rel))
    name = os.path.splitext(os.path.basename(path))[0]
    if not rel or not os.path.isfile(path):
        raise DefinitionError(f"scenario '{token}': no mix file {path}")
    if not NAME_RE.match(name) or name in SCENARIOS:
        raise DefinitionError(f"scenario '{token}': its name '{name}' (the file's stem) must be "
                              f"[A-Za-z0-9._-]+ and none of {', '.join(SCENARIOS)}")
    return name, path


def register_mix(name, path):
    """Records mix scenario NAME at PATH (DefinitionError when NAME names another file); NAME."""
    if _CUSTOM.get(name, path) != path:
        raise DefinitionError(f"scenario '{name}' names two mix files: {_CUSTOM[name]} and {path}")
    _CUSTOM[name] = path
    return name


def custom_mix(name, env=None):
    """The mix file of mix scenario NAME (registered, or in SCENARIO_MIXES), or None."""
    env = os.environ if env is None else env
    if name in _CUSTOM:
        return _CUSTOM[name]
    for p in (env.get("SCENARIO_MIXES") or "").split(":"):
        if p and os.path.splitext(os.path.basename(p))[0] == name and os.path.isfile(p):
            return register_mix(name, os.path.abspath(p)) and _CUSTOM[name]
    return None


def mix_kinds(path):
    """The request kinds (verify.MixLine.kind) of the mix file at PATH; DefinitionError when
    it cannot be read."""
    from . import verify
    try:
        return {line.kind() for line in verify.parse_mix(path, "x")[1]}
    except (OSError, verify.Fail) as err:
        raise DefinitionError(f"{path}: {err}") from None


def scenario_name(token, base=None):
    """NAME for a scenario token: s1..s4 as they are, "mix:PATH" registered (mix_scenario)."""
    if token.startswith(MIX_PREFIX):
        return register_mix(*mix_scenario(token, base))
    return token


def _fail(path, why):
    raise DefinitionError(f"{path}: {why}")


def check_template(path, where, text):
    """Raises DefinitionError unless every {name} in TEXT is a known placeholder."""
    for m in FIELD_RE.finditer(text):
        tok = m.group(0)
        if tok in ("{{", "}}"):
            continue
        if m.group(1) is None:
            _fail(path, f"{where}: a lone '{tok}' (write '{tok}{tok}' for a literal brace)")
        if m.group(1) not in PLACEHOLDERS and not (where.startswith("env_args") and m.group(1) == "value"):
            _fail(path, f"{where}: unknown placeholder '{{{m.group(1)}}}' (known: "
                  + ", ".join("{%s}" % p for p in PLACEHOLDERS) + ")")


def _strings(path, key, value, allow_empty=False):
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        _fail(path, f"'{key}' must be an array of strings")
    if not value and not allow_empty:
        _fail(path, f"'{key}' must not be empty")
    return value


def check(path, doc):
    """Raises DefinitionError when DOC (a parsed definition) breaks servers/README.md's rules."""
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        _fail(path, f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (known: "
              + ", ".join(sorted(KEYS)) + ")")
    if "scenarios" not in doc:
        _fail(path, "'scenarios' is required")
    if ("command" in doc) == ("url" in doc):
        _fail(path, "'command' is required (or 'url' for a server already running, and no command)")
    if "url" in doc:
        m = URL_RE.match(doc["url"]) if isinstance(doc["url"], str) else None
        if not m or not 1 <= int(m.group(2)) <= 65535:
            _fail(path, f"url must be http://HOST:PORT, got '{doc['url']}'")
        other = sorted(set(doc) & {"env", "env_args", "stop_signal", "build", "build_command"})
        if other:
            _fail(path, f"a server already running (url) takes no {', '.join(other)}")
    else:
        for i, arg in enumerate(_strings(path, "command", doc["command"])):
            check_template(path, f"command[{i}]", arg)
        if doc["command"][0] == "":
            _fail(path, "command[0] (the program) is empty")
    scs = _strings(path, "scenarios", doc["scenarios"])
    for s in scs:
        if s.startswith(MIX_PREFIX):
            try:
                mix_scenario(s, os.path.dirname(os.path.abspath(path)))
            except DefinitionError as err:
                _fail(path, str(err))
        elif s not in SCENARIOS:
            _fail(path, f"unknown scenario '{s}' (known: {', '.join(SCENARIOS)}, or mix:PATH)")
    if len(set(scs)) != len(scs):
        _fail(path, "a scenario is listed twice")
    for key in ("description", "ready_path", "stop_signal"):
        if key in doc and not isinstance(doc[key], str):
            _fail(path, f"'{key}' must be a string")
    if not doc.get("ready_path", "/").startswith("/"):
        _fail(path, f"ready_path must start with '/', got '{doc['ready_path']}'")
    if any(c in doc.get("ready_path", "") for c in " \r\n"):
        _fail(path, "ready_path must not hold spaces or line breaks")
    sig = doc.get("stop_signal", "TERM")
    if sig not in SIGNALS:
        _fail(path, f"stop_signal must be one of {', '.join(SIGNALS)}, got '{sig}'")
    env = doc.get("env", {})
    if not isinstance(env, dict):
        _fail(path, "'env' must be a table of strings")
    for k, v in env.items():
        if not ENV_NAME_RE.match(k) or not isinstance(v, str):
            _fail(path, f"env: '{k}' must be a variable name with a string value")
        check_template(path, f"env.{k}", v)
    if "build_command" in doc:
        for i, arg in enumerate(_strings(path, "build_command", doc["build_command"])):
            check_template(path, f"build_command[{i}]", arg)
            bad = [m.group(1) for m in FIELD_RE.finditer(arg) if m.group(1) and m.group(1) not in BUILD_PLACEHOLDERS]
            if bad:
                _fail(path, f"build_command[{i}]: only {{root}} and {{build}} are known before a run, not '{{{bad[0]}}}'")
    if "version" in doc:
        for i, arg in enumerate(_strings(path, "version", doc["version"])):
            check_template(path, f"version[{i}]", arg)
    for b in _strings(path, "build", doc.get("build", []), allow_empty=True):
        if not NAME_RE.match(b):
            _fail(path, f"build: '{b}' is not a binary name of this project")
    ea = doc.get("env_args", {})
    if not isinstance(ea, dict):
        _fail(path, "'env_args' must be a table")
    for k, v in ea.items():
        if not ENV_NAME_RE.match(k):
            _fail(path, f"env_args: '{k}' is not a variable name")
        for i, arg in enumerate(_strings(path, f"env_args.{k}", v)):
            check_template(path, f"env_args.{k}[{i}]", arg)


def search_dirs(root=ROOT, server_defs=None):
    """The folders read, in order: ROOT/servers, then each folder of SERVER_DEFS (a
    ':'-separated list; the environment's when None), each folder once however often it is
    named. Raises DefinitionError for a listed folder that does not exist."""
    if server_defs is None:
        server_defs = os.environ.get("SERVER_DEFS", "")
    dirs = [os.path.join(root, "servers")]
    seen = {os.path.realpath(dirs[0])}
    for d in server_defs.split(":"):
        if not d:
            continue
        if not os.path.isdir(d):
            raise DefinitionError(f"SERVER_DEFS: no such folder '{d}'")
        if os.path.realpath(d) in seen:
            continue  # a folder named twice (or servers/ itself) is read once
        seen.add(os.path.realpath(d))
        dirs.append(d)
    return dirs


def _read_toml(path):
    """The document of the TOML file PATH; DefinitionError naming PATH when it cannot be read
    or is not TOML."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as err:
        _fail(path, f"not valid TOML: {err}")
    except OSError as err:
        _fail(path, f"cannot be read: {err.strerror}")


def load_file(path):
    """The Server defined by PATH (its name is the file's stem)."""
    name = os.path.basename(path)[:-len(".toml")]
    if not NAME_RE.match(name):
        _fail(path, f"the name '{name}' (the file's stem) may hold only [A-Za-z0-9._-]")
    doc = _read_toml(path)
    check(path, doc)
    return Server(name, path, doc)


def load_all(root=ROOT, server_defs=None):
    """{name: Server} of every definition in search_dirs(); a name defined twice raises
    DefinitionError naming both files."""
    out = {}
    for d in search_dirs(root, server_defs):
        for entry in sorted(os.listdir(d)):
            path = os.path.join(d, entry)
            if not entry.endswith(".toml") or not os.path.isfile(path):
                continue
            srv = load_file(path)
            if srv.name in out:
                raise DefinitionError(f"server '{srv.name}' is defined twice: {out[srv.name].path} and {path}")
            out[srv.name] = srv
    return out


def get(defs, name):
    """The Server NAME of DEFS; DefinitionError (listing the known names) when unknown."""
    if name not in defs:
        raise DefinitionError(f"unknown server '{name}' (defined: {', '.join(sorted(defs)) or 'none'}; "
                              "see ./runner.sh --list-servers)")
    return defs[name]


def plan(defs, name, scenario=None, root=ROOT):
    """What runner.sh needs of server NAME (on SCENARIO, when given), as a dict: name, file
    (relative to ROOT when inside it), sha256, description, scenarios, build, ours (it has
    build: one of this project's binaries), ready_path, stop_signal, store, uses_db, program
    (command[0]'s last part), env_args (the variable names), build_command (it has one),
    uses_access_log (it is given
    {access_log}: CONTRACT.md section 7) and, with SCENARIO, scenario and
    mix (the loadgen-scripts/ file). Raises DefinitionError for an
    unknown server, an unknown scenario or one the definition does not list."""
    srv = get(defs, name)
    rel = os.path.relpath(srv.path, root)
    out = {"name": srv.name, "file": srv.path if rel.startswith("..") else rel, "sha256": srv.sha256(),
           "description": srv.description, "scenarios": list(srv.scenarios), "build": list(srv.build),
           "ours": bool(srv.build), "ready_path": srv.ready_path, "stop_signal": srv.stop_signal,
           "store": srv.store, "uses_db": srv.uses("db"),
           "program": os.path.basename(srv.command[0]) if srv.command else None,
           "env_args": sorted(srv.env_args), "uses_access_log": srv.uses("access_log") if srv.command else None,
           "build_command": srv.build_command is not None, "url": srv.url}
    if scenario is not None:
        scenario = scenario_name(scenario)
        if scenario not in SCENARIOS and custom_mix(scenario) is None:
            raise DefinitionError(f"unknown scenario '{scenario}' (one of: {' '.join(SCENARIOS)}, or mix:PATH)")
        if not srv.serves(scenario):
            raise DefinitionError(f"{name} does not serve {scenario}: its definition ({out['file']}) "
                                  f"lists {', '.join(srv.scenarios)}")
        out["scenario"], out["mix"] = scenario, MIXES.get(scenario) or custom_mix(scenario)
    return out


def fill(template, values):
    """TEMPLATE with every {placeholder} replaced from VALUES (str -> str) and {{ }} unescaped.
    Raises DefinitionError for a placeholder VALUES lacks."""
    def sub(m):
        tok = m.group(0)
        if tok in ("{{", "}}"):
            return tok[0]
        key = m.group(1)
        if key is None or key not in values:
            raise DefinitionError(f"no value for '{tok}'")
        return str(values[key])
    return FIELD_RE.sub(sub, template)


def expand(srv, values, variables=None):
    """(argv, env) of SRV for one run: the command with VALUES filled in, then for each
    env_args variable set (non-empty) in VARIABLES (the runner's environment) its arguments
    with {value}; env is the definition's env filled in. (version_argv gives its version
    command filled in.)"""
    variables = os.environ if variables is None else variables
    argv = [fill(a, values) for a in srv.command]
    for var, args in srv.env_args.items():
        val = variables.get(var, "")
        if val != "":
            argv += [fill(a, dict(values, value=val)) for a in args]
    env = {k: fill(v, values) for k, v in srv.env.items()}
    return argv, env


def build_argv(srv, values):
    """SRV's build_command with VALUES ({root}, {build}) filled in, or None when it has none."""
    return [fill(a, values) for a in srv.build_command] if srv.build_command else None


def version_argv(srv, values):
    """SRV's version command with VALUES filled in, or None when the definition has none."""
    return [fill(a, values) for a in srv.version] if srv.version else None


class Pairs:
    """A list of comparisons (candidate, baseline, scenarios) and the scenarios that decide the
    overall verdict (None: DECIDING where a pair shares them, else all it shares)."""

    def __init__(self, pairs, decides=None):
        self.pairs, self.decides = pairs, decides


def pair_scenarios(defs, candidate, baseline, wanted=None):
    """The scenarios both CANDIDATE and BASELINE serve (in SCENARIOS order, then the mix
    scenarios of WANTED or of their definitions), limited to WANTED."""
    a, b = get(defs, candidate), get(defs, baseline)
    order = list(SCENARIOS) + [s for s in (wanted or []) + a.scenarios + b.scenarios if s not in SCENARIOS]
    order = list(dict.fromkeys(order))
    return [s for s in order if a.serves(s) and b.serves(s) and (wanted is None or s in wanted)]


def load_pairs(path, defs):
    """The Pairs of a pairs file (runner/default-pairs.toml's shape). Raises DefinitionError."""
    doc = _read_toml(path)
    if set(doc) - {"pair", "decides"}:
        _fail(path, "only 'decides' and [[pair]] tables are allowed")
    decides = doc.get("decides")
    if decides is not None:
        for s in _strings(path, "decides", decides, allow_empty=True):
            if s not in SCENARIOS:
                _fail(path, f"decides: unknown scenario '{s}'")
    pairs = []
    for i, p in enumerate(doc.get("pair") or []):
        if not isinstance(p, dict) or set(p) - {"candidate", "baseline", "scenarios"} or \
                not isinstance(p.get("candidate"), str) or not isinstance(p.get("baseline"), str):
            _fail(path, f"pair {i + 1}: needs candidate and baseline (names), optional scenarios")
        if p["candidate"] == p["baseline"]:
            _fail(path, f"pair {i + 1}: {p['candidate']} is compared with itself")
        try:
            shared = pair_scenarios(defs, p["candidate"], p["baseline"])
        except DefinitionError as err:
            _fail(path, f"pair {i + 1}: {err}")
        scs = p.get("scenarios", shared)
        for s in _strings(path, f"pair {i + 1} scenarios", scs):
            if s not in shared:
                _fail(path, f"pair {i + 1}: {p['candidate']} and {p['baseline']} do not both serve {s}")
        pairs.append((p["candidate"], p["baseline"], list(scs)))
    if not pairs:
        _fail(path, "no [[pair]]")
    return Pairs(pairs, decides)
