# throughput.gp: saturation req/s per comparison, candidate vs baseline, with the target mark
# (target ratio x baseline) over each candidate bar.
# Inputs: out, datafile (idx label candidate baseline mark), n (comparisons), target (ratio).
load plotsdir.'/common.gp'
set title 'Saturation throughput (closed loop)'
set ylabel 'req/s'
set yrange [0:*]
set xrange [0.4:n + 0.6]
set xtics scale 0
set key outside bottom center horizontal noopaque nobox
set style fill solid 0.85 border -1
set boxwidth 0.36
plot datafile using ($1 - 0.19):3 with boxes lc rgb cand_color title 'candidate', \
     '' using ($1 + 0.19):4 with boxes lc rgb base_color title 'baseline', \
     '' using ($1 - 0.37):5:(0.36):(0) with vectors nohead dt 2 lw 2.5 lc rgb 'black' \
        title sprintf('target: %.2f x baseline', target), \
     '' using 1:(NaN):xtic(2) notitle
