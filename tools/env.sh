# Sourced by the scripts in tools/: puts nvcc on PATH where the CUDA toolkit is installed.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
