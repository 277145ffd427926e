"""The torch integration tests (scripts/test.sh runs them in .venv-torch, which has torch; without
torch they skip). The package is imported from python/ and tdist._C from build*/python."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
