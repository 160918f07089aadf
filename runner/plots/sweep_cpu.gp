# sweep_cpu.gp: server CPU (solid) and the load generator's CPU (dotted) against the offered
# load of a rate sweep, both servers of a scenario, percent of one CPU; each server's knee a
# dashed vertical line. Hollow markers: steps whose figures are not the server's.
# Inputs: out, plotsdir, candfile and basefile (offered_rps p50 p99 p99.9 hollow server_cpu
# loadgen_cpu, one line per step), plottitle, candname, basename, candknee and baseknee
# (req/s; 0: no knee), xmax (req/s), lgbound (the loadgen-bound CPU threshold, percent of one
# CPU: SPEC.md section 8; 0: not drawn).
load plotsdir.'/common.gp'
set title plottitle noenhanced
set xlabel 'offered load (req/s)'
set ylabel 'CPU (% of one CPU)'
set yrange [0:*]
set xrange [0:xmax]
set grid xtics ytics lc rgb '#dddddd' lt 1
set key outside bottom center horizontal noopaque nobox maxrows 3
if (candknee > 0) { set arrow 1 from candknee, graph 0 to candknee, graph 1 nohead dt 2 lw 1.5 lc rgb cand_color }
if (baseknee > 0) { set arrow 2 from baseknee, graph 0 to baseknee, graph 1 nohead dt 2 lw 1.5 lc rgb base_color }
if (!exists('lgbound')) lgbound = 0
if (lgbound > 0) { set arrow 3 from graph 0, first lgbound to graph 1, first lgbound nohead dt 3 lw 1 lc rgb '#888888'; set label 3 'loadgen-bound' at graph 0.01, first lgbound offset 0, 0.6 font ',9' tc rgb '#666666' }
solid(h, v) = h > 0 ? NaN : v
hollow(h, v) = h > 0 ? v : NaN
plot candfile using 1:6 with lines dt 1 lw 2 lc rgb cand_color title candname.' server CPU' noenhanced, \
     '' using 1:(solid($5, $6)) with points pt 7 ps 0.7 lc rgb cand_color notitle, \
     '' using 1:(hollow($5, $6)) with points pt 6 ps 0.7 lc rgb cand_color notitle, \
     '' using 1:7 with linespoints dt 3 lw 1.2 pt 1 ps 0.6 lc rgb cand_color title candname.' loadgen CPU' noenhanced, \
     basefile using 1:6 with lines dt 1 lw 2 lc rgb base_color title basename.' server CPU' noenhanced, \
     '' using 1:(solid($5, $6)) with points pt 7 ps 0.7 lc rgb base_color notitle, \
     '' using 1:(hollow($5, $6)) with points pt 6 ps 0.7 lc rgb base_color notitle, \
     '' using 1:7 with linespoints dt 3 lw 1.2 pt 1 ps 0.6 lc rgb base_color title basename.' loadgen CPU' noenhanced, \
     NaN with lines dt 2 lw 1.5 lc rgb cand_color title (candknee > 0 ? candname.' knee' : '') noenhanced, \
     NaN with lines dt 2 lw 1.5 lc rgb base_color title (baseknee > 0 ? basename.' knee' : '') noenhanced
