"""Output files that never follow a planted symlink (the Python side of truffld's rule).

The text goes to a fresh temporary name in the same directory (O_CREAT|O_EXCL|O_NOFOLLOW, mode
0640 as the C++ tools' outputs), then os.replace() renames it over the target: a symlink at the
target is replaced, never followed, and a reader sees the old file or the complete new one. Thread-safety: reentrant.
"""
import os


def write_text(path, text):
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
