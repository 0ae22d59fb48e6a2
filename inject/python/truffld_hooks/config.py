"""Configuration of the hooks, read once from environment variables.

All switches are environment variables because the hooks are enabled without touching the
engine's command line (vLLM forks/spawns workers and Ray copies selected variables):

========================  =======  ==========================================================
variable                  default  meaning
========================  =======  ==========================================================
TRUFFLD_HOOKS             1        0 disables everything (sitecustomize still chains)
TRUFFLD_HOOKS_STEPS       1        step ranges for vLLM V1/V0 and SGLang
TRUFFLD_HOOKS_FRONTEND    1        frontend ranges from the injection table + module forwards
TRUFFLD_HOOKS_MODULES     1        module forward ranges through torch's global module hooks
TRUFFLD_HOOKS_BACKEND     auto     auto: torch emit_nvtx, else a dispatch-mode shim; emit_nvtx,
                                   dispatch, or 0
TRUFFLD_HOOKS_COMM        1        communication ranges (vLLM/SGLang communicators,
                                   torch.distributed)
TRUFFLD_HOOKS_DOMAINS     1        0: emit table ranges in NVTX's default domain, not theirs
TRUFFLD_HOOKS_TABLE       (pkg)    path of the injection table JSON
TRUFFLD_PYNVTX_LIB        (pkg)    path of libtruffld_pynvtx.so
TRUFFLD_HOOKS_STRIP_SUFFIX 1       strip vLLM's random "-xxxxxxxx" request id suffix (also off
                                   when VLLM_DISABLE_REQUEST_ID_RANDOMIZATION is set)
TRUFFLD_HOOKS_WINDOWS     1        per-operator layers (frontend, module hooks, backend) only
                                   inside the injector's detail windows; 0: always on
TRUFFLD_HOOKS_DEBUG       0        1: one line per patch/skip on stderr
========================  =======  ==========================================================

Thread-safety: ``Config`` is immutable after ``from_environ``.
"""

import os
import sys

_FALSE = ("0", "false", "no", "off", "")


def _flag(env, name, default):
    value = env.get(name)
    if value is None:
        return default
    return value.strip().lower() not in _FALSE


class Config(object):
    """Parsed switches (see module docstring). Build with ``Config.from_environ()``."""

    __slots__ = ("enabled", "steps", "frontend", "modules", "backend", "comm", "domains", "table_path", "table_is_default",
                 "pynvtx_path", "strip_suffix", "windows", "debug")

    def __init__(self, **kw):
        for key in self.__slots__:
            setattr(self, key, kw[key])

    @classmethod
    def from_environ(cls, env=None):
        env = os.environ if env is None else env
        backend = env.get("TRUFFLD_HOOKS_BACKEND", "auto").strip().lower()
        if backend in _FALSE:
            backend = "off"
        elif backend not in ("auto", "emit_nvtx", "dispatch"):
            sys.stderr.write("truffld_hooks: TRUFFLD_HOOKS_BACKEND=%r is not one of auto, "
                             "emit_nvtx, dispatch, 0; using auto\n" % backend)
            backend = "auto"
        randomization_off = _flag(env, "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION", False)
        return cls(
            enabled=_flag(env, "TRUFFLD_HOOKS", True),
            steps=_flag(env, "TRUFFLD_HOOKS_STEPS", True),
            frontend=_flag(env, "TRUFFLD_HOOKS_FRONTEND", True),
            modules=_flag(env, "TRUFFLD_HOOKS_MODULES", True),
            backend=backend,
            comm=_flag(env, "TRUFFLD_HOOKS_COMM", True),
            domains=_flag(env, "TRUFFLD_HOOKS_DOMAINS", True),
            table_path=env.get("TRUFFLD_HOOKS_TABLE") or default_table_path(),
            table_is_default=not env.get("TRUFFLD_HOOKS_TABLE"),
            pynvtx_path=env.get("TRUFFLD_PYNVTX_LIB") or "",
            strip_suffix=_flag(env, "TRUFFLD_HOOKS_STRIP_SUFFIX", True) and not randomization_off,
            windows=_flag(env, "TRUFFLD_HOOKS_WINDOWS", True),
            debug=_flag(env, "TRUFFLD_HOOKS_DEBUG", False),
        )


def default_table_path():
    """The installed copy next to the package, else the source tree's schemas/ copy."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "injection_table.json")
    if os.path.exists(installed):
        return installed
    return os.path.normpath(os.path.join(here, "..", "..", "..", "schemas",
                                         "injection_table.json"))


def debug_log(config, message):
    if config is not None and config.debug:
        sys.stderr.write("truffld_hooks[%d]: %s\n" % (os.getpid(), message))
