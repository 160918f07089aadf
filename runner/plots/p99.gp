# p99.gp: client p99 (loadgen, corrected) beside the server's handler p99 (/metrics), per
# scenario and server, in ms on a log scale (saturation runs).
# Inputs: out, datafile (idx label cand_client cand_handler base_client base_handler), n,
# ymin (a decade below the smallest value, so that every bar shows).
load plotsdir.'/common.gp'
set terminal svg size 900,400 dynamic enhanced font 'sans,11' background rgb 'white'
set output out
set title 'p99: client (loadgen) vs server handler'
set ylabel 'p99 latency (ms, log scale)'
set logscale y
set yrange [ymin:*]
set xrange [0.4:n + 0.6]
set xtics scale 0
set key outside bottom center horizontal noopaque nobox
set boxwidth 0.19
set style fill solid 0.85 border -1
plot datafile using ($1 - 0.3):3 with boxes lc rgb cand_color title 'candidate client p99', \
     '' using ($1 - 0.1):4 with boxes lc rgb '#9ecae9' title 'candidate handler p99', \
     '' using ($1 + 0.1):5 with boxes lc rgb base_color title 'baseline client p99', \
     '' using ($1 + 0.3):6 with boxes lc rgb '#ffc58a' title 'baseline handler p99', \
     '' using 1:(NaN):xtic(2) notitle
