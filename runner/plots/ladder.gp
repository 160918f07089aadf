# ladder.gp: the ladder of the actor runtime's choices (./run_all.sh --ladder): per rung its
# req/CPU-s ratio to async-server with the confidence interval (bars, left axis) and its
# user-space instructions a request (points, right axis); the line at 1 is parity (it also
# keeps the plot drawable when no rung has a ratio: a smoke batch).
# Inputs: out, plotsdir, datafile (idx label ratio ci_low ci_high instructions), n (rungs),
# plottitle.
load plotsdir.'/common.gp'
set title plottitle noenhanced
set ylabel 'actor / async (req/CPU-s)'
set y2label 'instructions a request'
set yrange [0:*]
set y2range [0:*]
set y2tics nomirror
set xrange [0.4:n + 0.6]
set xtics scale 0
set key outside bottom center horizontal noopaque nobox
set style fill solid 0.85 border -1
set boxwidth 0.5
plot datafile using 1:3 with boxes lc rgb '#6c8ebf' title 'ratio to async', \
     '' using 1:3:4:5 with yerrorbars pt -1 lw 1.5 lc rgb 'black' title 'confidence interval', \
     '' using 1:6 axes x1y2 with linespoints pt 7 lw 2 lc rgb '#c0392b' title 'instructions a request', \
     1 with lines dt 3 lw 1.5 lc rgb '#555555' title 'as fast as async (1.0)', \
     '' using 1:(NaN):xtic(2) notitle
