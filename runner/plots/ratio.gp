# ratio.gp: the verdict ratio candidate / baseline per comparison (on the figure the verdict
# used) with its confidence interval as an error bar, and the target ratio as a line.
# Inputs: out, datafile (idx label ratio basis ci_low ci_high), n (comparisons), target.
load plotsdir.'/common.gp'
set title 'Verdict ratio candidate / baseline with its confidence interval'
set ylabel 'candidate / baseline'
set yrange [0:*]
set xrange [0.4:n + 0.6]
set xtics scale 0
set key outside bottom center horizontal noopaque nobox
set style fill solid 0.85 border -1
set boxwidth 0.5
set offsets 0, 0, 0.25, 0
plot datafile using 1:3 with boxes lc rgb '#6c8ebf' title 'ratio', \
     '' using 1:3:5:6 with yerrorbars pt -1 lw 1.5 lc rgb 'black' title 'confidence interval', \
     '' using 1:3:(sprintf('%.3f (%s)', $3, strcol(4))) with labels offset 2.5,0.8 font ',9' notitle, \
     target with lines dt 2 lw 2.5 lc rgb '#c0392b' title sprintf('target %.2f', target), \
     '' using 1:(NaN):xtic(2) notitle
