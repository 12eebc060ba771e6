"""Repository URLs as git reads them: remote or local, one normal form, no credentials.

Pure string functions, used by the store (matching repositories by URL) and by the git
layer (`tasks/git.py`, which re-exports them); see docs/git-and-credentials.md.

git's own rule decides what is remote: a `scheme://` URL, or the scp-like form
`[user@]host:path` (a colon before any slash), e.g. `git@github.com:o/r.git` and
`deploy@host:a/b.git`. Everything else (`/abs`, `./rel`, `~/x`) is a local path;
`file://` URLs are URLs (git clones them like remotes).

Credentials never belong in a URL: a token there is written to logs, the catalog and
Prefect's database. `url_credentials` finds them, `redact_url` hides them in any text.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# git's scp-like syntax: no slash before the first colon; a one-letter "host" is a Windows drive.
_SCP_RE = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]{2,}):(?P<path>(?!//).*)$")
# The user-info part of every `scheme://user-info@` in a text.
_USERINFO_IN_TEXT_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s'\"]+)@")
# A password in scp-like form (`user:secret@host:path`), which git would hand to ssh.
_SCP_PASSWORD_RE = re.compile(r"^\s*(?P<userinfo>[^/@\s]*:[^/@\s]*)@")
# Schemes where a user name without a password is an account name, not a secret.
_SSH_SCHEMES = ("ssh", "git+ssh", "ssh+git")
REDACTED = "***"


def is_scp_like(url_or_path: str) -> bool:
    s = url_or_path.strip()
    return not _SCHEME_RE.match(s) and bool(_SCP_RE.match(s))


def is_remote(url_or_path: str) -> bool:
    """True for what git treats as a URL (`scheme://...` including `file://`, or `[user@]host:path`)."""
    s = url_or_path.strip()
    return bool(_SCHEME_RE.match(s)) or is_scp_like(s)


def url_credentials(url: str) -> str | None:
    """The secret-bearing user info of `url`, or None.

    Any password (`user:secret@`) counts; so does any user name in http(s), git:// or
    other non-ssh URLs (`https://TOKEN@host/...` is how tokens are usually pasted). An ssh
    user name alone (`git@github.com:o/r`, `ssh://git@host/r`) is an account, not a secret.
    """
    s = url.strip()
    if not _SCHEME_RE.match(s):
        m = _SCP_PASSWORD_RE.match(s)
        return m["userinfo"] if m else None
    parts = urlsplit(s)
    if "@" not in parts.netloc:
        return None
    userinfo = parts.netloc.rsplit("@", 1)[0]
    if ":" in userinfo or parts.scheme.lower() not in _SSH_SCHEMES:
        return userinfo
    return None


def redact_url(text: str) -> str:
    """`text` with the user info of every `scheme://user-info@` URL in it replaced by `***`
    (`http://user:TOKEN@host/x.git` -> `http://***@host/x.git`). Works on a single URL or
    on any message (git's stderr quotes the URL it failed on)."""
    text = _USERINFO_IN_TEXT_RE.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    return _SCP_PASSWORD_RE.sub(f"{REDACTED}@", text, count=1)


def normalize_url(url_or_path: str) -> str:
    """One spelling per repository, for matching and recording: user info removed, scp-like
    form as `https://host/path`, host lower-cased, no trailing `/` or `.git`. Local paths
    lose only a trailing `/` and `.git`.

    >>> normalize_url("git@github.com:leanprover-community/mathlib4.git")
    'https://github.com/leanprover-community/mathlib4'
    """
    s = url_or_path.strip()
    if is_scp_like(s):
        m = _SCP_RE.match(s)
        s = f"https://{m['host'].lower()}/{m['path'].lstrip('/')}"
    elif _SCHEME_RE.match(s):
        parts = urlsplit(s)
        host = parts.netloc.rsplit("@", 1)[-1].lower()
        s = parts._replace(scheme=parts.scheme.lower(), netloc=host).geturl()
    s = s.rstrip("/")
    return s.removesuffix(".git").rstrip("/")


def same_repository(a: str, b: str) -> bool:
    return normalize_url(a) == normalize_url(b)


def repo_name(url: str) -> str:
    """The last path component of a repository URL or path, without `.git`."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    name = name.split(":")[-1]
    return name.removesuffix(".git") or "repo"
