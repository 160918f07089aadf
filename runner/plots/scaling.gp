# scaling.gp: saturation throughput (solid, left axis, req/s) and efficiency (dashed, right
# axis, req per server CPU-second) against the number of server CPUs, both servers of one
# scenario (./run_all.sh --scaling).
# Inputs: out, plotsdir, candfile and basefile (server_cpus rps req_per_cpu_sec, one line
# per count), plottitle, candname, basename, xmax (the largest count).
load plotsdir.'/common.gp'
set title plottitle noenhanced
set xlabel 'server CPUs'
set ylabel 'saturation (req/s)'
set y2label 'req per server CPU-second'
set yrange [0:*]
set y2range [0:*]
set y2tics nomirror
set xrange [0.5:xmax + 0.5]
set xtics 1
set key outside bottom center horizontal noopaque nobox maxrows 2
plot candfile using 1:2 with linespoints dt 1 lw 2 pt 7 lc rgb cand_color title candname.' req/s' noenhanced, \
     basefile using 1:2 with linespoints dt 1 lw 2 pt 7 lc rgb base_color title basename.' req/s' noenhanced, \
     candfile using 1:3 axes x1y2 with linespoints dt 2 lw 1.5 pt 6 lc rgb cand_color title candname.' req/CPU-s' noenhanced, \
     basefile using 1:3 axes x1y2 with linespoints dt 2 lw 1.5 pt 6 lc rgb base_color title basename.' req/CPU-s' noenhanced
