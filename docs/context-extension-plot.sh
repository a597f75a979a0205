#!/bin/sh
# Regenerates docs/context-extension-wavelengths.png: wavelength per frequency
# pair, and its ratio to the unscaled wavelength, for every configs/rope/*.yaml
# (one shared model: head_dim 128, rope_theta 500000, trained at 8192 tokens,
# extended 8x), as `rotor rope` computes them for a 65536-token sequence.
#   usage: docs/context-extension-plot.sh [path/to/rotor]   (default build/rotor)
# Needs gnuplot (Debian: gnuplot-nox).
set -eu
cd "$(dirname "$0")/.."
rotor="${1:-build/rotor}"
data="$(mktemp)"
trap 'rm -f "$data" "$data.default"' EXIT

# One wavelength per line, from the "wavelength" list of `rotor rope --json`.
wavelengths() {
  "$rotor" rope --config "configs/rope/$1.yaml" --seq-len 65536 --json |
    sed -n 's/^  "wavelength": \[\(.*\)\],$/\1/p' | tr ',' '\n'
}
wavelengths default > "$data.default"
for method in default linear ntk dynamic yarn llama3 longrope; do
  # Columns: pair index, wavelength, wavelength / unscaled wavelength.
  wavelengths "$method" | paste - "$data.default" |
    awk -v m="$method" 'BEGIN { print "# " m } { print NR - 1, $1, $1 / $2 }'
  printf '\n\n'
done > "$data"

gnuplot <<GNUPLOT
set terminal pngcairo size 960,900 font 'sans,11'
set output 'docs/context-extension-wavelengths.png'
set style line 1 lw 3 lc rgb 'black'
set style line 2 lw 2 lc rgb '#1f77b4'
set style line 3 lw 2 lc rgb '#2ca02c'
set style line 4 lw 2 lc rgb '#ff7f0e' dt 2
set style line 5 lw 3 lc rgb '#d62728'
set style line 6 lw 2 lc rgb '#9467bd'
set style line 7 lw 2 lc rgb '#8c564b' dt 3
set multiplot layout 2,1 title 'RoPE scaling: head\_dim 128, base 500000, trained at 8192 tokens, extended 8x (sequence 65536)'
set xrange [0:63]
set grid
set logscale y
set format y '10^{%L}'
set xlabel 'frequency pair index i (0 = fastest rotation)'
set ylabel 'wavelength 2{/Symbol p}/inv\_freq (tokens)'
set key top left
plot '$data' index 0 using 1:2 with lines ls 1 title 'default (unscaled)', \
     '' index 1 using 1:2 with lines ls 2 title 'linear', \
     '' index 2 using 1:2 with lines ls 3 title 'ntk', \
     '' index 3 using 1:2 with lines ls 4 title 'dynamic', \
     '' index 4 using 1:2 with lines ls 5 title 'yarn', \
     '' index 5 using 1:2 with lines ls 6 title 'llama3', \
     '' index 6 using 1:2 with lines ls 7 title 'longrope (illustrative factors)', \
     8192 with lines dt 4 lc rgb 'gray40' title 'original context 8192', \
     65536 with lines dt 5 lc rgb 'gray60' title 'target context 65536'
set ylabel 'wavelength / unscaled wavelength'
set format y '%g'
set yrange [0.8:80]
set ytics (1, 2, 4, 8, 16, 32, 64)
plot '$data' index 0 using 1:3 with lines ls 1 title 'default', \
     '' index 1 using 1:3 with lines ls 2 title 'linear', \
     '' index 2 using 1:3 with lines ls 3 title 'ntk', \
     '' index 3 using 1:3 with lines ls 4 title 'dynamic', \
     '' index 4 using 1:3 with lines ls 5 title 'yarn', \
     '' index 5 using 1:3 with lines ls 6 title 'llama3', \
     '' index 6 using 1:3 with lines ls 7 title 'longrope'
unset multiplot
GNUPLOT
echo "wrote docs/context-extension-wavelengths.png"
