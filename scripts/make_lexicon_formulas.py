"""Make the shipped lexicon's formula table again (vcrime_audit/lexicon_formulas.py says when).

    python scripts/make_lexicon_formulas.py
"""

from vcrime_audit.harm import DEFAULT_LEXICON, load_lexicon
from vcrime_audit.lexicon_formulas import TABLE, write_table

if __name__ == "__main__":
    write_table(load_lexicon(DEFAULT_LEXICON, compile_now=False).every_pattern())
    print(f"wrote {TABLE}")
