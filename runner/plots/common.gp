# common.gp: terminal and style shared by every report plot (loaded by the others).
# Inputs (gnuplot -e): out, plotsdir, the SVG file to write. No mouse/standalone: no scripts, no network.
set terminal svg size 640,400 dynamic enhanced font 'sans,11' background rgb 'white'
set output out
set datafile missing 'NaN'
set border 3 lc rgb '#555555'
set grid ytics lc rgb '#dddddd' lt 1
set key top left box lc rgb '#cccccc' opaque
set tics nomirror
cand_color = '#1f77b4'
base_color = '#ff7f0e'
