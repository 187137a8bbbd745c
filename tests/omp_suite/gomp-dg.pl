#!/usr/bin/env perl
# Reads the DejaGnu directives of one test of GCC's libgomp testsuite (libgomp.c/*.c,
# libgomp.c++/*.C, libgomp.c-c++-common/*.c, libgomp.fortran/*) and says how run.sh builds and
# runs it on this host (x86_64 Linux, gcc built without offload compilers).
# Usage: gomp-dg.pl [--lang c|c++|fortran] FILE          (default c: the test compiled as C)
#        gomp-dg.pl [--lang L] --output FILE LOG
# The first prints:
#   skip REASON                  the test is not run here (it is then the only line), or
#   flags WORD...                compiler options: -fopenmp, dg-options (default -O2), then every
#                                dg-additional-options whose target selector holds, without
#                                -fdump-* (compiler dumps only)
#   sources FILE...              dg-additional-sources, relative to the test's directory
#   env NAME=VALUE...            dg-set-target-env-var, set when the test runs
#   shouldfail yes|no            dg-shouldfail: the program must end with a failure status
#   output yes|no                whether the test has dg-output patterns
# The second exits 0 when the program's output LOG (stdout and stderr together) matches the
# test's dg-output patterns as DejaGnu matches them: the patterns, after Tcl's backslash
# substitution of their quoted text, joined into one regular expression that must match
# somewhere in the output (`.` matching newlines too); 1 with a message when it does not.
# A test is run when libgomp's testsuite would run it (dg-do run, libgomp's default when absent)
# and the target selector holds, it is not skipped everywhere, and it needs no offload device
# or offload compiler.
use strict;
use warnings;

my $usage = "usage: gomp-dg.pl [--lang c|c++|fortran] [--output] FILE [LOG]\n";
my ($lang, $check) = ('c', 0);
while (@ARGV && $ARGV[0] =~ /^--/) {
    my $opt = shift;
    if ($opt eq '--lang') { $lang = shift // die $usage; }
    elsif ($opt eq '--output') { $check = 1; }
    else { die $usage; }
}
die "gomp-dg.pl: unknown language $lang\n" unless $lang =~ /^(c|c\+\+|fortran)$/;
my $file = shift or die $usage;
my $log = $check ? (shift // die $usage) : undef;
open(my $fh, '<', $file) or die "$file: $!\n";
my @dg;
while (my $line = <$fh>) {
    # A directive: `{ dg-NAME ARGS }`, ARGS holding nested `{ }` groups.
    push @dg, [$1, $2] while $line =~ /\{\s*(dg-[a-z-]+)\s*((?:[^{}]|(\{(?:[^{}]++|(?3))*\}))*?)\s*\}/g;
}
close $fh;

# Effective targets that hold for gcc 12 on x86_64 Linux without offloading, and the language's
# own (g++ 12 compiles C++17 by default).
my %holds = map { $_ => 1 } qw(lp64 lto tls tls_runtime sync_int_long size32plus shared fpic
  large_long_double __float128 sse2_runtime avx_runtime vect_simd_clones pthread);
my %lang_targets = (c => [qw(c)], 'c++' => [qw(c++ c++11 c++14 c++17)], fortran => [qw(fortran)]);
$holds{$_} = 1 for @{$lang_targets{$lang}};
my $triplet = 'x86_64-pc-linux-gnu';

# holds SELECTOR: a `target` selector: words (one holding is enough), { }, &&, ||, !.
sub holds {
    my ($sel) = @_;
    my ($expr, $prev_operand) = ('', 0);
    for my $tok ($sel =~ /(\{|\}|&&|\|\||!|[^\s{}!&|]+)/g) {
        my $operand_start = ($tok eq '{' || $tok eq '!' || $tok !~ /^(\}|&&|\|\|)$/);
        $expr .= ' || ' if $prev_operand && $operand_start;
        if ($tok eq '{') { $expr .= '('; $prev_operand = 0; }
        elsif ($tok eq '}') { $expr .= ')'; $prev_operand = 1; }
        elsif ($tok eq '&&' || $tok eq '||' || $tok eq '!') { $expr .= " $tok "; $prev_operand = 0; }
        else {
            my $v;
            if ($tok =~ /-/) {
                (my $re = quotemeta $tok) =~ s/\\\*/.*/g;
                $re =~ s/\\\?/./g;
                $v = $triplet =~ /^$re$/ ? 1 : 0;
            } else {
                $v = $holds{$tok} ? 1 : 0;
            }
            $expr .= $v;
            $prev_operand = 1;
        }
    }
    my $r = eval $expr;
    die "$file: cannot read target selector '$sel'\n" if $@;
    return $r;
}

# tcl_subst TEXT: Tcl's backslash substitution in a quoted word (`\n` a newline, `\[` a `[`).
sub tcl_subst {
    my ($text) = @_;
    my %esc = (a => "\a", b => "\b", f => "\f", n => "\n", r => "\r", t => "\t", v => "\x0b");
    $text =~ s{\\(?:x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|([0-7]{1,3})|\n\s*|(.))}{
        defined $1 ? chr(hex $1) : defined $2 ? chr(hex $2) : defined $3 ? chr(oct $3)
          : !defined $4 ? ' ' : exists $esc{$4} ? $esc{$4} : $4
    }gse;
    return $text;
}

# args TEXT: the directive's arguments: quoted strings (Tcl-substituted) and {...} groups,
# brace-stripped.
sub args {
    my ($text) = @_;
    my @a;
    while ($text =~ /\G\s*("((?:[^"\\]|\\.)*)"|\{((?:[^{}]++|(\{(?:[^{}]++|(?4))*\}))*)\}|(\S+))/gcs) {
        push @a, defined $2 ? tcl_subst($2) : defined $3 ? "{$3}" : $5;
    }
    return @a;
}

# applies ARGS_AFTER_FIRST: an optional `{ target SEL }` selector on a directive.
sub applies {
    my ($sel) = @_;
    return 1 unless defined $sel;
    return holds($1) if $sel =~ /^\{\s*target\s+(.*)\}$/s;
    return holds($1) if $sel =~ /^\{\s*(.*)\}$/s;    # dg-xfail-*/dg-skip-if selectors
    return 1;
}

my ($do, @options, @additional, @sources, @env) = ('run');
my ($options_set, $shouldfail, $output) = (0, 0, '');
for (@dg) {
    my ($name, $text) = @$_;
    my @a = args($text);
    if ($name eq 'dg-do') {
        $do = applies($a[1]) ? $a[0] : 'skip';
    } elsif ($name eq 'dg-shouldfail') {
        $shouldfail = 1 if applies($a[1]);
    } elsif ($name eq 'dg-output') {
        $output .= $a[0] if applies($a[1]);
    } elsif ($name eq 'dg-skip-if') {
        if (applies($a[1])) { print "skip dg-skip-if\n"; exit 0; }
    } elsif ($name eq 'dg-require-effective-target') {
        unless (holds($a[0])) { print "skip requires $a[0]\n"; exit 0; }
    } elsif ($name eq 'dg-options') {
        if (applies($a[1])) { @options = split ' ', $a[0]; $options_set = 1; }
    } elsif ($name eq 'dg-additional-options') {
        push @additional, split ' ', $a[0] if applies($a[1]);
    } elsif ($name eq 'dg-add-options') {
        # __float128 needs nothing on x86_64.
    } elsif ($name eq 'dg-additional-sources') {
        push @sources, split ' ', $a[0];
    } elsif ($name eq 'dg-set-target-env-var') {
        push @env, "$a[0]=$a[1]";
    }
}
$do =~ s/"//g;
if ($check) {
    exit 0 if $output eq '';
    open(my $in, '<', $log) or die "$log: $!\n";
    my $text = do { local $/; <$in> };
    close $in;
    exit 0 if $text =~ /$output/s;
    print "output does not match dg-output /$output/\n";
    exit 1;
}
if ($do ne 'run') {
    print "skip dg-do $do\n";
    exit 0;
}
@options = ('-O2') unless $options_set;
my @flags = grep { !/^-fdump-/ && !/^-foffload=-fdump-/ } ('-fopenmp', @options, @additional);
if (my ($off) = grep { /^-foffload|nvptx|amdgcn/ } @flags) {
    print "skip needs an offload compiler ($off)\n";
    exit 0;
}
print "flags @flags\n";
print "sources @sources\n";
print "env @env\n";
print "shouldfail ", ($shouldfail ? 'yes' : 'no'), "\n";
print "output ", ($output ne '' ? 'yes' : 'no'), "\n";
