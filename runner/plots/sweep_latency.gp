# sweep_latency.gp: corrected latency p50 (dotted), p99 (solid) and p99.9 (dashed) against the
# offered load of a rate sweep, both servers of a scenario on one plot (log y), each server's
# knee a dashed vertical line in its colour. Hollow markers: steps whose figures are not the
# server's (limited by the load generator, or crowded), which the knee rule skips.
# Inputs: out, plotsdir, candfile and basefile (offered_rps p50 p99 p99.9 hollow server_cpu
# loadgen_cpu, one line per step), plottitle, candname, basename, candknee and baseknee
# (req/s; 0: no knee), ymin (ms), xmax (req/s).
load plotsdir.'/common.gp'
set title plottitle noenhanced
set xlabel 'offered load (req/s)'
set ylabel 'corrected latency (ms, log scale)'
set logscale y
set yrange [ymin:*]
set xrange [0:xmax]
set grid xtics ytics lc rgb '#dddddd' lt 1
set key outside bottom center horizontal noopaque nobox maxrows 3
if (candknee > 0) { set arrow 1 from candknee, graph 0 to candknee, graph 1 nohead dt 2 lw 1.5 lc rgb cand_color }
if (baseknee > 0) { set arrow 2 from baseknee, graph 0 to baseknee, graph 1 nohead dt 2 lw 1.5 lc rgb base_color }
solid(h, v) = h > 0 ? NaN : v
hollow(h, v) = h > 0 ? v : NaN
plot candfile using 1:3 with lines dt 1 lw 2 lc rgb cand_color title candname.' p99' noenhanced, \
     '' using 1:(solid($5, $3)) with points pt 7 ps 0.7 lc rgb cand_color notitle, \
     '' using 1:(hollow($5, $3)) with points pt 6 ps 0.7 lc rgb cand_color notitle, \
     '' using 1:2 with lines dt 3 lw 1.2 lc rgb cand_color title candname.' p50' noenhanced, \
     '' using 1:(solid($5, $2)) with points pt 5 ps 0.5 lc rgb cand_color notitle, \
     '' using 1:(hollow($5, $2)) with points pt 4 ps 0.5 lc rgb cand_color notitle, \
     '' using 1:4 with lines dt 2 lw 1.2 lc rgb cand_color title candname.' p99.9' noenhanced, \
     '' using 1:(solid($5, $4)) with points pt 9 ps 0.6 lc rgb cand_color notitle, \
     '' using 1:(hollow($5, $4)) with points pt 8 ps 0.6 lc rgb cand_color notitle, \
     basefile using 1:3 with lines dt 1 lw 2 lc rgb base_color title basename.' p99' noenhanced, \
     '' using 1:(solid($5, $3)) with points pt 7 ps 0.7 lc rgb base_color notitle, \
     '' using 1:(hollow($5, $3)) with points pt 6 ps 0.7 lc rgb base_color notitle, \
     '' using 1:2 with lines dt 3 lw 1.2 lc rgb base_color title basename.' p50' noenhanced, \
     '' using 1:(solid($5, $2)) with points pt 5 ps 0.5 lc rgb base_color notitle, \
     '' using 1:(hollow($5, $2)) with points pt 4 ps 0.5 lc rgb base_color notitle, \
     '' using 1:4 with lines dt 2 lw 1.2 lc rgb base_color title basename.' p99.9' noenhanced, \
     '' using 1:(solid($5, $4)) with points pt 9 ps 0.6 lc rgb base_color notitle, \
     '' using 1:(hollow($5, $4)) with points pt 8 ps 0.6 lc rgb base_color notitle, \
     NaN with lines dt 2 lw 1.5 lc rgb cand_color title (candknee > 0 ? candname.' knee' : '') noenhanced, \
     NaN with lines dt 2 lw 1.5 lc rgb base_color title (baseknee > 0 ? basename.' knee' : '') noenhanced, \
     NaN with points pt 6 ps 0.7 lc rgb '#555555' title 'hollow: not the server''s figures'
