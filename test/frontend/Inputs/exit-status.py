# Runs a command and fails unless it exits with exactly the given status
# (`not` cannot tell an error exit from a crash); output passes through.
import subprocess
import sys

want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.buffer.write(proc.stdout)
if proc.returncode != want:
    print(f"exit-status.py: expected exit status {want}, got {proc.returncode}")
    sys.exit(1)
