"""A sandbox started by root is as powerless as one started by anyone else (issue 30, item 1).

bubblewrap keeps root's capabilities unless told otherwise: a delegated sub-agent ran
``mount --bind / /tmp/x``, read the host's signing key under it, signed a checkpoint, and
``%deepagent_resume`` ran its code in the user's notebook. Here each attack runs as a sub-agent's
code in a real sandboxed kernel, from a host running as root and from one dropped to an unprivileged
user (`sandbox_hosts`): the kernel has no capability (effective, permitted, bounding, ambient,
inheritable), no new privileges, its own user namespace, and a seccomp filter that refuses the calls
a kernel never needs, also when tried through a foreign ABI. Where libseccomp is missing, or the host
refuses user namespaces (as Docker's default profile does), the sandbox still drops every capability
and the record says what was not applied.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import sys
import tempfile
import textwrap

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.display.markup import not_sandboxed_line
from deepagent_magics.interpreters.pool import KernelPool, sandbox, seccomp
from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
from deepagent_magics.testing import ScriptedLM

from tests.adversarial.sandbox_hosts import HOSTS, make_host

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess]


@pytest.fixture(autouse=True)
def _bubblewrap_and_libseccomp_here():
    """Fail, saying how to fix it, where bubblewrap or libseccomp is missing (DEEPAGENT_SKIP_SANDBOX=1: a skip)."""
    reason = sandbox.unavailable() or seccomp.unavailable()
    if reason is not None:
        if os.environ.get("DEEPAGENT_SKIP_SANDBOX") == "1":
            pytest.skip(f"no sandbox here: {reason}")
        pytest.fail(f"the sandbox is not whole here ({reason}): make test installs bubblewrap and libseccomp2 as "
                    "root; DEEPAGENT_SKIP_SANDBOX=1 skips these tests")


@pytest.fixture(params=HOSTS)
def host(request):
    host = make_host(request.param)
    yield host
    host.close()


STATUS = r"""
import os, shutil, subprocess
def status():
    lines = open('/proc/self/status').read().splitlines()
    return {name: value.strip() for name, _, value in (line.partition(':') for line in lines)}
"""

NONE = "0000000000000000"
NO_CAPABILITY = {"CapInh": NONE, "CapPrm": NONE, "CapEff": NONE, "CapBnd": NONE, "CapAmb": NONE,
                 "NoNewPrivs": "1", "Seccomp": "2"}


def test_a_sub_agent_has_no_capability_and_cannot_gain_one(host):
    key = host.home / "host.key"  # a host secret in a folder the sandbox hides: mount would show it again
    key.write_text("HOST-KEY-0123456789abcdef")
    host.own(key)
    result = host.run(STATUS + textwrap.dedent(f"""
        mine = status()
        report = {{name: mine.get(name) for name in {sorted(NO_CAPABILITY)!r}}}
        def sh(command):
            done = subprocess.run(command, shell=True, capture_output=True, text=True)
            return [done.returncode, (done.stdout + done.stderr).strip()[-200:]]
        os.makedirs('/tmp/x', exist_ok=True)
        report['mount --bind'] = sh('mount --bind / /tmp/x')[0]
        report['key through the mount'] = os.path.exists('/tmp/x' + {str(key)!r})
        report['unshare -m'] = sh('unshare -m true')[0]
        report['unshare -U'] = sh('unshare -U true')[0]
        report['unshare -Ur'] = sh('unshare -Ur true')[0]
        capsh = subprocess.run(['capsh', '--print'], capture_output=True, text=True).stdout if shutil.which('capsh') else ''
        report['capsh'] = [line.strip() for line in capsh.splitlines() if line.startswith(('Current:', 'Bounding set'))]
        # a child keeps nothing more: status of a process the kernel starts
        report['child'] = sh("grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")[1]
    """))
    report = result["report"]
    assert {name: report[name] for name in NO_CAPABILITY} == NO_CAPABILITY, report
    assert report["mount --bind"] != 0 and report["key through the mount"] is False, report
    assert report["unshare -m"] != 0 and report["unshare -U"] != 0 and report["unshare -Ur"] != 0, report
    assert report["capsh"] in (["Current: =", "Bounding set ="], []), report["capsh"]  # [] where capsh is missing
    assert report["child"].split() == ["NoNewPrivs:", "1", "Seccomp:", "2"] or \
        report["child"].split()[:4] == ["CapEff:", NONE, "CapBnd:", NONE], report["child"]
    isolation = result["isolation"]
    assert isolation == {"sandbox": "bubblewrap", "network": False, "capabilities": "none", "no_new_privileges": True,
                         "user_namespace": True, "seccomp": True}


# Each call below, made with arguments it would accept, must be refused with EPERM (clone3: ENOSYS, so
# the C library falls back to clone, whose namespace flags are checked).
CALLS = r"""
import ctypes, errno, os, signal, subprocess, time
import pyseccomp
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(arg) for arg in args])
    if result == 0 and name == 'clone':
        os._exit(0)  # a child made without the filter: gone at once
    return errno.errorcode.get(ctypes.get_errno(), 'ok') if result == -1 else 'ok'
buffer = ctypes.create_string_buffer(256)
address = ctypes.addressof(buffer)
sleeper = subprocess.Popen(['sleep', '30'])
net = os.open('/proc/self/ns/net', os.O_RDONLY)
report = {
    'mount': call('mount', address, address, address, 0, 0),
    'umount2': call('umount2', address, 0),
    'pivot_root': call('pivot_root', address, address),
    'unshare(user)': call('unshare', 0x10000000),
    'unshare(mount)': call('unshare', 0x00020000),
    'setns': call('setns', net, 0),
    'clone(user)': call('clone', 0x10000000 | signal.SIGCHLD, 0, 0, 0, 0),
    'clone(net)': call('clone', 0x40000000 | signal.SIGCHLD, 0, 0, 0, 0),
    'clone3': call('clone3', address, 88),
    'ptrace(attach a child)': call('ptrace', 16, sleeper.pid, 0, 0),
    'process_vm_readv': call('process_vm_readv', sleeper.pid, address, 1, address, 1, 0),
    'keyctl(join keyring)': call('keyctl', 1, 0),
    'add_key': call('add_key', address, address, address, 1, -3),
    'request_key': call('request_key', address, address, 0, -3),
    'bpf': call('bpf', 0, address, 64),
    'perf_event_open': call('perf_event_open', address, 0, -1, -1, 0),
    'userfaultfd': call('userfaultfd', 0),
    'io_uring_setup': call('io_uring_setup', 1, address),
    'open_by_handle_at': call('open_by_handle_at', -1, address, 0),
    'init_module': call('init_module', address, 0, address),
    'kexec_load': call('kexec_load', 0, 0, 0, 0),
    'swapon': call('swapon', address, 0),
    'reboot': call('reboot', 0, 0, 0, 0),
    'personality(no ASLR)': call('personality', 0x0040000),
    'ioctl(TIOCSTI)': call('ioctl', 0, 0x5412, address),
}
report['personality(query)'] = libc.personality(0xffffffff) != -1  # asking is still allowed
sleeper.kill()
"""
REFUSED = {name: ("ENOSYS" if name == "clone3" else "EPERM") for name in (
    "mount", "umount2", "pivot_root", "unshare(user)", "unshare(mount)", "setns", "clone(user)", "clone(net)",
    "clone3", "ptrace(attach a child)", "process_vm_readv", "keyctl(join keyring)", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "open_by_handle_at", "init_module", "kexec_load", "swapon",
    "reboot", "personality(no ASLR)", "ioctl(TIOCSTI)")}

# x86-64 machine code: mount() through the x32 ABI (its number | 0x40000000) and through int 0x80 (i386's 21).
FOREIGN_ABI = {"x32": "b8a50000400f05c3", "i386": "b815000000cd80c3"}
RUN_CODE = """
import ctypes, mmap, sys
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(bytes.fromhex(sys.argv[1]))
print(ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(page)))())
"""


def test_the_calls_a_kernel_never_needs_are_refused_through_any_abi(host):
    foreign = ""
    if platform.machine() == "x86_64":
        foreign = f"""
            import sys
            report['foreign'] = {{abi: subprocess.run([sys.executable, '-c', {RUN_CODE!r}, code]).returncode
                                 for abi, code in {FOREIGN_ABI!r}.items()}}
        """
    result = host.run(CALLS + textwrap.dedent(foreign))
    report = result["report"]
    assert {name: report.get(name) for name in REFUSED} == REFUSED
    assert report["personality(query)"] is True
    if foreign:  # the filter admits the native ABI only: another one ends the process (SIGSYS)
        assert report["foreign"] == {"x32": -signal.SIGSYS, "i386": -signal.SIGSYS}


# --------------------------------------------------------------------------- the attack of the issue
@pytest.fixture
def host_key(monkeypatch):
    """The host's key where the host keeps it, outside every folder of the test (as in the issue)."""
    folder = tempfile.mkdtemp(prefix="deepagent-key-", dir="/var/tmp")
    key = os.path.join(folder, "host.key")
    with open(key, "w") as handle:
        handle.write("HOST-KEY-0123456789abcdef")
    monkeypatch.setenv("DEEPAGENT_HOST_KEY", key)
    yield key
    shutil.rmtree(folder, ignore_errors=True)


def test_a_delegated_sub_agent_cannot_mount_its_way_to_the_host_key(tmp_path, host_key):
    steal = textwrap.dedent(f"""
        import os, subprocess
        os.makedirs('/tmp/x', exist_ok=True)
        mounted = subprocess.run(['mount', '--bind', '/', '/tmp/x'], capture_output=True, text=True)
        def read(path):
            try:
                return open(path).read()
            except OSError as exc:
                return type(exc).__name__
        SUBMIT(result={{'mount': mounted.returncode, 'through the mount': read('/tmp/x' + {host_key!r}),
                        'directly': read({host_key!r})}})
    """)
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: get the key'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Mount the host and read its key.", steal)],
    })
    with KernelPool(size=0) as pool:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=120).run("ROOT: go")
    assert run.status == "finished", run.error
    [child] = run.children
    assert child.status == "finished", child.error
    assert "HOST-KEY" not in str(child.result) and "HOST-KEY" not in run.steps[0].output
    assert child.result["mount"] != 0, child.result
    assert child.config["sandbox"] == {"sandbox": "bubblewrap", "network": False, "capabilities": "none",
                                       "no_new_privileges": True, "user_namespace": True, "seccomp": True}
    assert not_sandboxed_line(run) is None


# --------------------------------------------------------------------------- where a part is missing
@pytest.fixture
def no_libseccomp(monkeypatch):
    """This machine as one without libseccomp (its binding cannot be imported)."""
    monkeypatch.setitem(sys.modules, "pyseccomp", None)
    seccomp.program.cache_clear()
    sandbox.forget_probes()
    yield
    seccomp.program.cache_clear()
    sandbox.forget_probes()


def test_without_libseccomp_no_capability_still_and_the_record_and_run_line_say_no_filter(tmp_path, no_libseccomp):
    check = STATUS + textwrap.dedent("""
        mine = status()
        mounted = subprocess.run(['mount', '--bind', '/', '/tmp'], capture_output=True).returncode
        SUBMIT(result={'CapEff': mine['CapEff'], 'CapBnd': mine['CapBnd'], 'NoNewPrivs': mine['NoNewPrivs'],
                       'Seccomp': mine['Seccomp'], 'mount': mounted})
    """)
    lm = ScriptedLM(scripts={
        "ROOT": [("Delegate.", "print(delegate('CHILD: look'))"), ("Done.", "SUBMIT(result='ok')")],
        "CHILD": [("Look.", check)],
    })
    with KernelPool(size=0, sandbox=SandboxPolicy(required=True)) as pool:  # required: still runs, sandboxed
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=120).run("ROOT: go")
    [child] = run.children
    assert child.status == "finished", child.error
    assert child.result == {"CapEff": NONE, "CapBnd": NONE, "NoNewPrivs": "1", "Seccomp": "0",
                            "mount": child.result["mount"]} and child.result["mount"] != 0
    isolation = child.config["sandbox"]
    assert isolation["sandbox"] == "bubblewrap" and isolation["capabilities"] == "none"
    assert isolation["seccomp"] is False and isolation["missing"] == {"seccomp": "pyseccomp is not installed"}
    line = not_sandboxed_line(run)
    assert line is not None and line.startswith("deepagent: sub-agents ran sandboxed without a seccomp filter "
                                                "(pyseccomp is not installed)") and "\n" not in line


# Loaded by the host on itself before anything else: user namespaces refused, as Docker's default seccomp
# profile refuses them to a container's root.
REFUSE_USER_NAMESPACES = """
import errno, pyseccomp
rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
rules.add_rule(pyseccomp.ERRNO(errno.EPERM), 'unshare', pyseccomp.Arg(0, pyseccomp.MASKED_EQ, 0x10000000, 0x10000000))
rules.add_rule(pyseccomp.ERRNO(errno.EPERM), 'clone', pyseccomp.Arg(0, pyseccomp.MASKED_EQ, 0x10000000, 0x10000000))
rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), 'clone3')
rules.load()
"""


def test_a_root_host_that_refuses_user_namespaces_still_gives_no_capability_and_says_so():
    host = make_host("root")
    try:
        result = host.run(STATUS + textwrap.dedent("""
            mine = status()
            report = {name: mine[name] for name in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb', 'NoNewPrivs', 'Seccomp')}
            report['mount'] = subprocess.run(['mount', '--bind', '/', '/tmp'], capture_output=True).returncode
            report['uid_map'] = open('/proc/self/uid_map').read().split()
        """), before=REFUSE_USER_NAMESPACES)
    finally:
        host.close()
    report = result["report"]
    assert report.pop("mount") != 0
    assert report.pop("uid_map") == ["0", "0", "4294967295"]  # the host's own user namespace
    assert report == {"CapInh": NONE, "CapPrm": NONE, "CapEff": NONE, "CapAmb": NONE, "NoNewPrivs": "1",
                      "Seccomp": "2"}
    isolation = result["isolation"]
    assert isolation["user_namespace"] is False and isolation["seccomp"] is True
    assert isolation["capabilities"] == "none"
    assert isolation["missing"]["user_namespace"].startswith("bwrap could not create one here")
