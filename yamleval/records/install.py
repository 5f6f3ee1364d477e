"""How to install one of yamleval's extras, as every message that needs one says it: from the
package index, and from a checkout of yamleval's source, where the index form would install a
second, released copy instead of the extra for the code being run."""
from __future__ import annotations


def install_hint(extra: str) -> str:
    """``pip install 'yamleval[serve]' (in a checkout of yamleval: pip install '.[serve]')``."""
    return f"pip install 'yamleval[{extra}]' (in a checkout of yamleval: pip install '.[{extra}]')"
