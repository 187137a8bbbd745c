#!/usr/bin/env perl
# Reads the DejaGnu directives of one test of GCC's libgomp testsuite (libgomp.c/*.c or
# libgomp.c-c++-common/*.c) and says how run.sh builds and runs it on this host (x86_64 Linux,
# gcc built without offload compilers, the test compiled as C). Prints:
#   skip REASON                  the test is not run here (it is then the only line), or
#   flags WORD...                gcc options: -fopenmp, dg-options (default -O2), then every
#                                dg-additional-options whose target selector holds, without
#                                -fdump-* (compiler dumps only)
#   sources FILE...              dg-additional-sources, relative to the test's directory
#   env NAME=VALUE...            dg-set-target-env-var, set when the test runs
# A test is run when libgomp's testsuite would run it (dg-do run, libgomp's default when absent)
# and the target selector holds, it is not dg-shouldfail or skipped everywhere, and it needs no
# offload device or offload compiler.
use strict;
use warnings;

my $file = shift or die "usage: gomp-dg.pl FILE\n";
open(my $fh, '<', $file) or die "$file: $!\n";
my @dg;
while (my $line = <$fh>) {
    # A directive: `{ dg-NAME ARGS }`, ARGS holding nested `{ }` groups.
    push @dg, [$1, $2] while $line =~ /\{\s*(dg-[a-z-]+)\s*((?:[^{}]|(\{(?:[^{}]++|(?3))*\}))*?)\s*\}/g;
}
close $fh;

# Effective targets that hold for gcc 12 on x86_64 Linux without offloading, compiling C.
my %holds = map { $_ => 1 } qw(c lp64 lto tls tls_runtime sync_int_long size32plus shared fpic
  large_long_double __float128 sse2_runtime avx_runtime vect_simd_clones pthread);
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

# args TEXT: the directive's arguments: quoted strings and {...} groups, brace-stripped.
sub args {
    my ($text) = @_;
    my @a;
    while ($text =~ /\G\s*("([^"]*)"|\{((?:[^{}]++|(\{(?:[^{}]++|(?4))*\}))*)\}|(\S+))/gc) {
        push @a, defined $2 ? $2 : defined $3 ? "{$3}" : $5;
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
my $options_set = 0;
for (@dg) {
    my ($name, $text) = @$_;
    my @a = args($text);
    if ($name eq 'dg-do') {
        $do = applies($a[1]) ? $a[0] : 'skip';
    } elsif ($name eq 'dg-shouldfail') {
        print "skip dg-shouldfail\n";
        exit 0;
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
