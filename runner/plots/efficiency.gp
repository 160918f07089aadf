# efficiency.gp: requests per server CPU-second per comparison, candidate and baseline, in the
# saturation runs (own load) and the equal-load runs.
# Inputs: out, datafile (idx label cand_own base_own cand_equal base_equal), n.
load plotsdir.'/common.gp'
set terminal svg size 900,400 dynamic enhanced font 'sans,11' background rgb 'white'
set output out
set title 'Requests per server CPU-second (higher is better)'
set ylabel 'req / CPU-s'
set yrange [0:*]
set xrange [0.4:n + 0.6]
set xtics scale 0
set key outside bottom center horizontal noopaque nobox
set boxwidth 0.19
set style fill solid 0.85 border -1
plot datafile using ($1 - 0.3):3 with boxes lc rgb cand_color title 'candidate (own load)', \
     '' using ($1 - 0.1):4 with boxes lc rgb base_color title 'baseline (own load)', \
     '' using ($1 + 0.1):5 with boxes lc rgb '#9ecae9' title 'candidate (equal load)', \
     '' using ($1 + 0.3):6 with boxes lc rgb '#ffc58a' title 'baseline (equal load)', \
     '' using 1:(NaN):xtic(2) notitle
