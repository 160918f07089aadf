"""cpuplan: which CPUs the server, the load generator and nobody get, from the machine's
topology (/sys/devices/system/cpu: SMT siblings, L3 domains, NUMA nodes) and the affinity
mask (SPEC.md section 4). The one source of runner.sh's default SERVER_CPUS/LOADGEN_CPUS and
of run_all.sh --scaling's CPU lists; also judges a SERVER_CPUS/LOADGEN_CPUS override.
Reads files only (never writes, never pins anything); stdlib only, imports nothing else of
the package. Invariant: a plan never gives two sides CPUs of one physical core, except when
the mask holds a single core (then it says the run is not fair).
"""
import math
import os

# SMT policies (SMT=...). The server's policy decides what "N server CPUs" means; the load
# generator always runs on whole cores of its own.
SMT_POLICIES = {
    "one": "one hardware thread per server core, its SMT siblings left idle; the load generator "
           "uses every hardware thread of its own cores",
    "both": "every hardware thread of the server's cores (N server CPUs fill N / threads-per-core "
            "cores); the load generator likewise",
    "off": "one hardware thread per core on both sides, every SMT sibling left idle (as if SMT "
           "were off)",
}
DEFAULT_SMT = "one"
# The load generator's cores per server core: its CPU per request against the server's on
# loopback, closed loop, at most 1.43 here (async-mem s1, 2026-12-02, SPEC.md section 4),
# divided by the 90% at which it counts as the bottleneck (rules.LOADGEN_CPU_PCT):
# 1.43 / 0.9 = 1.59, rounded up.
LOADGEN_CORES_PER_SERVER_CORE = 1.6
DEFAULT_ROOT = "/sys/devices/system/cpu"


class PlanError(ValueError):
    """A plan the mask cannot give (the message says why), or bad input."""


# ---- CPU lists ----------------------------------------------------------------------------

def parse_list(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (sorted, unique). PlanError on bad input
    (also on an empty list)."""
    cpus = set()
    text = (text or "").strip()
    if not text:
        raise PlanError("empty CPU list")
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise PlanError(f"bad CPU list '{text}' (want e.g. 0-3,8)")
        lo, hi = int(lo), int(hi) if dash else int(lo)
        if hi < lo:
            raise PlanError(f"bad CPU range '{part}' in '{text}'")
        if hi > 65535:
            raise PlanError(f"CPU {hi} out of range in '{text}'")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5'; [] -> ''."""
    out, start, prev = [], None, None
    for c in sorted(set(cpus)):
        if start is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(out)


def _plural(n, word, words=None):
    return f"{n} {word if n == 1 else (words or word + 's')}"


# ---- topology -------------------------------------------------------------------------------

def _read(path):
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


class Core:
    """A physical core: its CPUs in the mask (sorted), all its hardware threads (siblings,
    also outside the mask), its package, L3 domain key and NUMA node (None when unknown)."""

    def __init__(self, cpus, siblings, package, l3, node):
        self.cpus, self.siblings = cpus, siblings
        self.package, self.l3, self.node = package, l3, node
        self.id = cpus[0]

    def __repr__(self):
        return f"Core({self.cpus})"


class Topology:
    """The cores of the CPUs of MASK read from ROOT (DIR/cpuN/topology/..., DIR/cpuN/cache/
    indexK/..., DIR/../node/nodeM/cpulist). Files that are missing degrade: no SMT known
    (every CPU its own core), no L3 known (the package is the domain), no NUMA known (one
    node); each said once in notes."""

    def __init__(self, root, mask):
        self.root, self.mask = root, sorted(set(mask))
        self.notes = []
        node_of = self._nodes()
        missing, no_smt, no_l3 = [], [], []
        per_cpu = {}
        for c in self.mask:
            d = os.path.join(root, f"cpu{c}")
            if not os.path.isdir(d):
                missing.append(c)
            sib = _read(os.path.join(d, "topology", "core_cpus_list")) or \
                _read(os.path.join(d, "topology", "thread_siblings_list"))
            try:
                siblings = parse_list(sib) if sib else [c]
            except PlanError:
                siblings = [c]
            if not sib:
                no_smt.append(c)
            if c not in siblings:
                siblings = sorted(set(siblings) | {c})
            pkg = _read(os.path.join(d, "topology", "physical_package_id"))
            pkg = int(pkg) if pkg and pkg.lstrip("-").isdigit() else None
            l3 = self._l3(d)
            if l3 is None:
                no_l3.append(c)
            per_cpu[c] = (tuple(siblings), pkg, l3, node_of.get(c))
        if missing:
            self.notes.append(f"CPU{'s' if len(missing) > 1 else ''} {format_list(missing)} of the mask "
                              f"{'are' if len(missing) > 1 else 'is'} not under {root}: taken as "
                              "cores of their own, L3 and node unknown")
        if no_smt:
            self.notes.append(f"no SMT information for CPU{'s' if len(no_smt) > 1 else ''} "
                              f"{format_list(no_smt)} (no topology/core_cpus_list or thread_siblings_list): "
                              "each taken as a core of its own")
        if no_l3:
            self.notes.append(f"no L3 cache information for CPU{'s' if len(no_l3) > 1 else ''} "
                              f"{format_list(no_l3)} (no cache/index*/ of level 3): the package taken "
                              "as their L3 domain")
        if not node_of:
            self.notes.append("no NUMA information (no ../node/node*/cpulist): one node assumed")
        groups = {}
        for c in self.mask:
            groups.setdefault(per_cpu[c][0], []).append(c)
        self.cores = []
        for sib, cpus in groups.items():
            _, pkg, l3, node = per_cpu[cpus[0]]
            if l3 is None:
                l3 = ("package", pkg)
            self.cores.append(Core(sorted(cpus), list(sib), pkg, l3, node))
        self.cores.sort(key=lambda k: k.id)
        self.core_of = {c: k for k in self.cores for c in k.cpus}
        self.smt = max((len(k.siblings) for k in self.cores), default=1)

    def _nodes(self):
        base = os.path.join(os.path.dirname(os.path.normpath(self.root)), "node")
        out = {}
        try:
            names = os.listdir(base)
        except OSError:
            return out
        for name in names:
            if not (name.startswith("node") and name[4:].isdigit()):
                continue
            text = _read(os.path.join(base, name, "cpulist"))
            if not text:
                continue
            try:
                for c in parse_list(text):
                    out[c] = int(name[4:])
            except PlanError:
                continue
        return out

    @staticmethod
    def _l3(cpu_dir):
        base = os.path.join(cpu_dir, "cache")
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return None
        for name in names:
            if not name.startswith("index"):
                continue
            if _read(os.path.join(base, name, "level")) != "3":
                continue
            shared = _read(os.path.join(base, name, "shared_cpu_list"))
            if shared:
                try:
                    return ("l3", tuple(parse_list(shared)))
                except PlanError:
                    return None
        return None

    def l3_name(self, key):
        """An L3 domain's key in words: 'L3 CPUs 0-7,32-39' or 'package 0'."""
        if key[0] == "l3":
            return f"the L3 of CPUs {format_list(key[1])}"
        return "package ?" if key[1] is None else f"package {key[1]}"

    def describe(self):
        """'8 cores x 2 hardware threads (SMT), 1 L3 domain, 1 NUMA node' for the mask."""
        l3s = {k.l3 for k in self.cores}
        nodes = {k.node for k in self.cores if k.node is not None}
        threads = "no SMT" if self.smt == 1 else f"{self.smt} hardware threads per core (SMT)"
        return (f"{_plural(len(self.mask), 'CPU')} in the mask ({format_list(self.mask)}) on "
                f"{_plural(len(self.cores), 'core')}, {threads}, {_plural(len(l3s), 'L3 domain')}, "
                f"{_plural(max(len(nodes), 1), 'NUMA node')}")


# ---- the plan -------------------------------------------------------------------------------

def _server_take(core, smt):
    return list(core.cpus) if smt == "both" else [core.cpus[0]]


def _loadgen_take(core, smt):
    return [core.cpus[0]] if smt == "off" else list(core.cpus)


def _place_server(topo, cores, n):
    """N cores of CORES for the server in as few L3 domains and NUMA nodes as possible: the
    smallest L3 domain that holds N (best fit keeps the large ones whole for the load
    generator), else the smallest node that holds N filled by its largest domains first, else
    the largest nodes and domains first."""
    by_l3, by_node = {}, {}
    for k in cores:
        by_l3.setdefault(k.l3, []).append(k)
        by_node.setdefault(k.node, []).append(k)
    fits = [ks for ks in by_l3.values() if len(ks) >= n]
    if fits:
        best = min(fits, key=lambda ks: (len(ks), ks[0].id))
        return best[:n]
    nfits = [ks for ks in by_node.values() if len(ks) >= n]
    pool = [min(nfits, key=lambda ks: (len(ks), ks[0].id))] if nfits else \
        sorted(by_node.values(), key=lambda ks: (-len(ks), ks[0].id))
    out = []
    for node_cores in pool:
        doms = {}
        for k in node_cores:
            doms.setdefault(k.l3, []).append(k)
        for ks in sorted(doms.values(), key=lambda ks: (-len(ks), ks[0].id)):
            for k in ks:
                if len(out) < n:
                    out.append(k)
    return out


def _place_loadgen(cores, server_cores, m):
    """Up to M cores of CORES for the load generator, preferring L3 domains the server does
    not use (on the server's nodes first), the largest such domain first; the server's own
    L3 domains last."""
    srv_l3 = {k.l3 for k in server_cores}
    srv_nodes = {k.node for k in server_cores}
    size = {}
    for k in cores:
        size[k.l3] = size.get(k.l3, 0) + 1
    first = {}
    for k in cores:
        first.setdefault(k.l3, k.id)
    order = sorted(cores, key=lambda k: (k.l3 in srv_l3, k.node not in srv_nodes, -size[k.l3],
                                         first[k.l3], k.id))
    return order[:m]


def loadgen_cores_wanted(n_server_cores, ratio=LOADGEN_CORES_PER_SERVER_CORE):
    """The load generator's cores for N server cores: ceil(ratio x N), at least 1."""
    return max(1, math.ceil(ratio * n_server_cores - 1e-9))


def _server_cores_for(count, smt, cores):
    """How many cores COUNT server CPUs take under SMT: whole cores filled with 'both'."""
    if smt != "both":
        return count
    got = 0
    for i, k in enumerate(cores):
        got += len(k.cpus)
        if got >= count:
            return i + 1
    return len(cores) + 1


def default_server_cores(n_cores, ratio=LOADGEN_CORES_PER_SERVER_CORE):
    """The default number of server cores on N cores: the most that leave the load
    generator its ratio (N / (1 + ratio), rounded down), at least 1; with ratio 0 (the load
    comes from other hosts) every core but one (the runner's)."""
    if ratio <= 0:
        return max(1, n_cores - 1)
    return max(1, int(n_cores // (1 + ratio)))


def plan(topo, smt=DEFAULT_SMT, count=None, server_cpus=None, loadgen_cpus=None,
         ratio=LOADGEN_CORES_PER_SERVER_CORE):
    """The plan on TOPO (a Topology of the mask): a dict with smt_policy, source ('plan',
    'override' or 'partial override'), mask, server_cpus, loadgen_cpus, idle_cpus (lists as
    '0-3,8'), server_cores, loadgen_cores, loadgen_cores_wanted, loadgen_ratio, reasons[]
    and warnings[] (in words).

    COUNT: the server's CPUs (hardware threads under smt 'both', cores otherwise); default
    default_server_cores. SERVER_CPUS / LOADGEN_CPUS (lists of ints): overrides, judged
    (siblings on both sides, overlap, CPUs outside the mask); a side not given is planned on
    the cores the other leaves. Raises PlanError when COUNT cannot be given with at least one
    core left for the load generator, or on a bad policy."""
    if smt not in SMT_POLICIES:
        raise PlanError(f"SMT must be one of {', '.join(SMT_POLICIES)}, got '{smt}'")
    cores = topo.cores
    if not cores:
        raise PlanError("no CPU in the mask")
    reasons = [f"topology: {topo.describe()}, read from {topo.root}"] + [f"topology: {n}" for n in topo.notes]
    warnings = []
    pol = f"SMT policy {smt}{' (the default)' if smt == DEFAULT_SMT else ''}: {SMT_POLICIES[smt]}"
    reasons.append(pol if topo.smt > 1 else pol + " (no core here has SMT siblings in the mask, so it "
                   "changes nothing)")
    given_s, given_l = server_cpus is not None, loadgen_cpus is not None
    source = "override" if given_s and given_l else "partial override" if given_s or given_l else "plan"
    mask = set(topo.mask)

    if given_s:
        srv = sorted(set(server_cpus))
        srv_cores = _cores_of(topo, srv)
        reasons.append(f"server: CPUs {format_list(srv)} as given (SERVER_CPUS)")
    if given_l:
        lg = sorted(set(loadgen_cpus))
        lg_cores = _cores_of(topo, lg)
        reasons.append(f"load generator: CPUs {format_list(lg)} as given (LOADGEN_CPUS)")

    if not given_s:
        free = [k for k in cores if not given_l or not (set(k.siblings) & set(lg))]
        if not free:
            raise PlanError(f"no core left for the server beside LOADGEN_CPUS {format_list(lg)}")
        want_cpus = count
        if count is not None:
            n_cores = _server_cores_for(count, smt, free)
        elif given_l:
            n_cores = len(free)  # every core the given load generator leaves
        else:
            n_cores = default_server_cores(len(free), ratio)
        # keep a core for the load generator, unless it is given or the mask has only one
        room = len(free) if given_l or len(cores) == 1 else len(free) - 1
        if n_cores > room:
            need = n_cores + (0 if given_l else 1)
            raise PlanError(f"{_plural(count if count is not None else n_cores, 'server CPU')} need "
                            f"{_plural(need, 'core')} with the load generator's apart"
                            f"{' under SMT ' + smt if smt == 'both' else ''}; the mask gives "
                            f"{_plural(len(free), 'core')} ({format_list(c for k in free for c in k.cpus)})")
        srv_cores = _place_server(topo, free, n_cores)
        srv = [c for k in srv_cores for c in _server_take(k, smt)]
        if want_cpus is not None and smt == "both":
            srv = srv[:want_cpus]
        reasons.append(_server_words(topo, srv_cores, srv, count is None and not given_l, ratio))

    if not given_l:
        wanted = loadgen_cores_wanted(len(srv_cores), ratio)
        free = [k for k in cores if not (set(k.siblings) & set(srv))]
        if not free:
            if len(cores) == 1:
                # a one-core mask: nothing can be apart; share it and say so
                k = cores[0]
                rest = [c for c in k.cpus if c not in srv]
                lg = rest[:1] if rest else list(srv)
                lg_cores = [k]
                warnings.append(f"the mask holds one core ({format_list(k.cpus)}): the load generator shares it "
                                "with the server, so the run is not fair (give the runner more CPUs)")
                reasons.append(f"load generator: CPU {format_list(lg)} (the only core)")
            else:
                raise PlanError(f"no core left for the load generator beside SERVER_CPUS {format_list(srv)}")
        else:
            lg_cores = _place_loadgen(free, srv_cores, wanted)
            lg = [c for k in lg_cores for c in _loadgen_take(k, smt)]
            reasons.append(_loadgen_words(topo, lg_cores, lg, srv_cores, wanted, ratio))
            if len(lg_cores) < wanted and ratio > 0:
                reasons.append(f"the load generator gets {_plural(len(lg_cores), 'core')}, fewer than the "
                               f"{wanted} its measured cost asks: the mask has no more; it may saturate before "
                               "the server, which the runner's loadgen-bound rules then say (SPEC.md section 8)")
    warnings += override_warnings(topo, srv, lg, srv_cores, lg_cores, given_s or given_l)
    idle = sorted(mask - set(srv) - set(lg))
    if idle:
        reasons.append("idle: " + _idle_words(topo, idle, srv_cores, lg_cores))
    else:
        reasons.append("idle: none")
    return {"smt_policy": smt, "source": source, "mask": format_list(topo.mask), "topology_root": topo.root,
            "server_cpus": format_list(srv), "loadgen_cpus": format_list(lg), "idle_cpus": format_list(idle),
            "server_cores": len(srv_cores), "loadgen_cores": len(lg_cores),
            "loadgen_cores_wanted": loadgen_cores_wanted(len(srv_cores), ratio), "loadgen_ratio": ratio,
            "reasons": reasons, "warnings": warnings}


def _cores_of(topo, cpus):
    out, seen = [], set()
    for c in cpus:
        k = topo.core_of.get(c)
        if k is not None and id(k) not in seen:
            seen.add(id(k))
            out.append(k)
    return out


def _where(topo, cores):
    """'in the L3 of CPUs 0-7 on node 0' for a set of cores."""
    l3s = sorted({k.l3 for k in cores}, key=lambda x: min(k.id for k in cores if k.l3 == x))
    nodes = sorted({k.node for k in cores if k.node is not None})
    text = "in " + (topo.l3_name(l3s[0]) if len(l3s) == 1 else
                    f"{len(l3s)} L3 domains (" + "; ".join(topo.l3_name(x) for x in l3s) + ")")
    if nodes:
        text += f" on node{'s' if len(nodes) > 1 else ''} " + ",".join(str(n) for n in nodes)
    return text


def _server_words(topo, cores, cpus, default, ratio):
    n = len(cores)
    why = (f" (the default: the most cores that leave the load generator {ratio:g} x as many, "
           f"{_plural(len(topo.cores), 'core')} / {1 + ratio:g} rounded down)" if default and ratio > 0 else
           " (the default with the load from other hosts: every core but the runner's)" if default else "")
    return (f"server: {_plural(n, 'core')}{why}, CPUs {format_list(cpus)}, {_where(topo, cores)}"
            + ("" if len({k.l3 for k in cores}) == 1 else
               ": more than one L3 domain holds them (no single one has enough cores)"))


def _loadgen_words(topo, cores, cpus, srv_cores, wanted, ratio):
    if ratio <= 0:
        return (f"load generator: the runner and its ssh clients only, the load comes from other hosts "
                f"(LOADGEN_HOSTS): {_plural(len(cores), 'core')}, CPUs {format_list(cpus)}, {_where(topo, cores)}")
    srv_l3 = {k.l3 for k in srv_cores}
    shared = [k for k in cores if k.l3 in srv_l3]
    known = all(k.l3[0] == "l3" for k in cores)
    apart = ("in L3 domains the server does not use" if not shared else
             "the same package as the server (its L3 domains are not known)" if not known else
             "sharing the server's L3 domain (no other domain is left)" if len(shared) == len(cores) else
             f"{_plural(len(shared), 'core')} of them in the server's L3 domain (the other domains are full)")
    return (f"load generator: {_plural(len(cores), 'core')} ({ratio:g} x {_plural(len(srv_cores), 'server core')}"
            f" = {wanted} wanted, from its CPU per request against the servers', SPEC.md section 4), CPUs "
            f"{format_list(cpus)}, {_where(topo, cores)}, {apart}")


def _cpus(cpus):
    return f"CPU{'s' if len(cpus) > 1 else ''} {format_list(cpus)}"


def _idle_words(topo, idle, srv_cores, lg_cores):
    sib = [c for c in idle if topo.core_of.get(c) in srv_cores]
    lsib = [c for c in idle if topo.core_of.get(c) in lg_cores]
    rest = [c for c in idle if c not in sib and c not in lsib]
    parts = []
    if sib:
        parts.append(f"{_cpus(sib)} (SMT siblings of the server's cores, kept off both sides)")
    if lsib:
        parts.append(f"{_cpus(lsib)} (SMT siblings of the load generator's cores)")
    if rest:
        parts.append(f"{_cpus(rest)} ({_plural(len({id(topo.core_of[c]) for c in rest if c in topo.core_of}), 'core')} "
                     "beyond what the plan needs)")
    return "; ".join(parts)


def override_warnings(topo, srv, lg, srv_cores=None, lg_cores=None, given=True):
    """The warnings of a CPU assignment: CPUs on both sides, SMT siblings on both sides, CPUs
    outside the mask (only those for GIVEN lists)."""
    out = []
    both = sorted(set(srv) & set(lg))
    if both and given:
        out.append(f"server and load generator share CPU{'s' if len(both) > 1 else ''} {format_list(both)}: "
                   "the run is not fair")
    pairs = []
    for k in topo.cores:
        s = [c for c in k.siblings if c in srv]
        g = [c for c in k.siblings if c in lg]
        if s and g and set(s) != set(g):
            pairs.append(f"{format_list(s)} (server) and {format_list(g)} (load generator)")
    if pairs and given:
        out.append("SMT siblings on both sides: " + "; ".join(pairs) + ": they share a core's execution units, "
                   "caches and clock, so the run is neither fair nor stable (SPEC.md section 4)")
    outside = sorted((set(srv) | set(lg)) - set(topo.mask))
    if outside and given:
        out.append(f"CPU{'s' if len(outside) > 1 else ''} {format_list(outside)} outside the mask "
                   f"{format_list(topo.mask)}")
    return out


def scaling(topo, counts, smt=DEFAULT_SMT, ratio=LOADGEN_CORES_PER_SERVER_CORE):
    """For each server CPU count (sorted, unique): ('run', n, plan) or ('skip', n, reason)."""
    out = []
    for n in sorted(set(counts)):
        try:
            p = plan(topo, smt, count=n, ratio=ratio)
        except PlanError as err:
            out.append(("skip", n, str(err)))
            continue
        if len(topo.cores) == 1:
            out.append(("skip", n, f"the mask holds one core ({topo.mask and format_list(topo.mask)}): "
                                   "nothing is left for the load generator"))
            continue
        out.append(("run", n, p))
    return out


def from_env(env=None, mask=None):
    """(Topology, smt, server_cpus or None, loadgen_cpus or None) from the environment:
    CPU_TOPOLOGY_ROOT (default /sys/devices/system/cpu), CPU_MASK (default MASK, else this
    process's affinity), SMT, SERVER_CPUS, LOADGEN_CPUS. PlanError on a bad value."""
    env = os.environ if env is None else env
    root = env.get("CPU_TOPOLOGY_ROOT") or DEFAULT_ROOT
    if not os.path.isdir(root):
        raise PlanError(f"CPU_TOPOLOGY_ROOT '{root}' is not a directory")
    def named_list(var, text):
        """parse_list, its error naming the variable the list came from."""
        try:
            return parse_list(text)
        except PlanError as err:
            raise PlanError(f"{var}: {err}") from None
    cpus = (named_list("CPU_MASK" if env.get("CPU_MASK") else "the mask", env.get("CPU_MASK") or mask)
            if env.get("CPU_MASK") or mask else sorted(os.sched_getaffinity(0)))
    smt = env.get("SMT") or DEFAULT_SMT
    if smt not in SMT_POLICIES:
        raise PlanError(f"SMT must be one of {', '.join(SMT_POLICIES)}, got '{smt}'")
    srv = named_list("SERVER_CPUS", env["SERVER_CPUS"]) if env.get("SERVER_CPUS") else None
    lg = named_list("LOADGEN_CPUS", env["LOADGEN_CPUS"]) if env.get("LOADGEN_CPUS") else None
    return Topology(root, cpus), smt, srv, lg


def text(p, prefix=""):
    """The plan as --cpu-plan prints it: server_cpus=, loadgen_cpus=, idle_cpus= lines, then
    the reasons and warnings, one per line."""
    lines = [f"{prefix}server_cpus={p['server_cpus']}", f"{prefix}loadgen_cpus={p['loadgen_cpus']}",
             f"{prefix}idle_cpus={p['idle_cpus']}"]
    lines += [f"  {r}" for r in p["reasons"]]
    lines += [f"  warning: {w}" for w in p["warnings"]]
    return lines
