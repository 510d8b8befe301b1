"""The app opens a shared archive (issue 40): a .tar.gz of a run directory, read from its
unpacked copy, with the counts of the run directory itself and the archive's name shown."""

from __future__ import annotations

import tarfile
from pathlib import Path

from ui_helpers import CPU_SAMPLE, counts_text, ready, screen_text, summary_json, sync

from tcview.ui.app import TcviewApp


@sync
async def test_app_opens_a_tar_gz(tmp_path: Path) -> None:
    archive = tmp_path / "shared_run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(CPU_SAMPLE, arcname=CPU_SAMPLE.name)
    app = TcviewApp(str(archive))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.model_session.error is None
        assert app.status_right == counts_text(summary_json(CPU_SAMPLE))
        assert "shared_run.tar.gz" in app.status_left
        assert "shared_run.tar.gz" in screen_text(app)
