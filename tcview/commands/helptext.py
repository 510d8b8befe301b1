"""Help text several commands share, in one place (no imports: every parser reads it)."""

ARCHIVES = ".gz, .xz, .bz2, .zst, .tar(.gz/.xz), .tgz or .zip"
INPUT_HELP = f"trace dir/file, log file, an archive of either ({ARCHIVES}), or - for stdin"
BENCH_INPUT_HELP = f"trace dir/file, run directory or log file, or an archive ({ARCHIVES})"
