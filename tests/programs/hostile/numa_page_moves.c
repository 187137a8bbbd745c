// move_pages and migrate_pages as on a one-node machine (they were ENOSYS): where pages are
// (EFAULT for an unmapped one), moves to node 0 (done where the page is), node numbers the
// machine lacks (ENODEV, EINVAL for migrate_pages), bad pointers, flags and pids; and a node
// mask of maxnode 0, which Linux's unsigned count makes a mask too large (EINVAL).
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
static long sc(long n,long a,long b,long c,long d,long e,long f){errno=0;long r=syscall(n,a,b,c,d,e,f);return r<0?-errno:r;}
int main(){
  char *m=mmap(0,1<<16,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  memset(m,1,1<<16);
  char *u=mmap(0,4096,PROT_NONE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); munmap(u,4096);
  void *pages[6]={m, m+4096, u, m+100, (void*)main, (void*)0};
  int status[6]; int nodes[6]={0,0,0,0,0,0};
  memset(status,0x55,sizeof status);
  long r=sc(SYS_move_pages,0,6,(long)pages,0,(long)status,0);
  printf("query %ld:",r); for(int i=0;i<6;i++) printf(" %d",status[i]); printf("\n");
  memset(status,0x55,sizeof status);
  r=sc(SYS_move_pages,0,6,(long)pages,(long)nodes,(long)status,0);
  printf("move0 %ld:",r); for(int i=0;i<6;i++) printf(" %d",status[i]); printf("\n");
  nodes[1]=1; r=sc(SYS_move_pages,0,2,(long)pages,(long)nodes,(long)status,0); printf("move node1 %ld\n",r);
  nodes[1]=-1; r=sc(SYS_move_pages,0,2,(long)pages,(long)nodes,(long)status,0); printf("move node-1 %ld\n",r);
  nodes[1]=5000; r=sc(SYS_move_pages,0,2,(long)pages,(long)nodes,(long)status,0); printf("move node5000 %ld\n",r);
  nodes[1]=0;
  printf("flags bad %ld\n", sc(SYS_move_pages,0,1,(long)pages,0,(long)status,8));
  printf("moveall %ld\n", sc(SYS_move_pages,0,1,(long)pages,(long)nodes,(long)status,4));
  printf("move flag %ld\n", sc(SYS_move_pages,0,1,(long)pages,(long)nodes,(long)status,2));
  printf("count0 %ld\n", sc(SYS_move_pages,0,0,(long)pages,0,(long)status,0));
  printf("badpages %ld\n", sc(SYS_move_pages,0,1,8,0,(long)status,0));
  printf("badstatus %ld\n", sc(SYS_move_pages,0,1,(long)pages,0,8,0));
  printf("badnodes %ld\n", sc(SYS_move_pages,0,1,(long)pages,8,(long)status,0));
  printf("self pid %ld\n", sc(SYS_move_pages,getpid(),1,(long)pages,0,(long)status,0));
  printf("nopid %ld\n", sc(SYS_move_pages,999999,1,(long)pages,0,(long)status,0));
  printf("negpid %ld\n", sc(SYS_move_pages,-1,1,(long)pages,0,(long)status,0));
  unsigned long o=1,n=1;
  printf("migrate %ld\n", sc(SYS_migrate_pages,0,2,(long)&o,(long)&n,0,0));
  n=2; printf("migrate to 1 %ld\n", sc(SYS_migrate_pages,0,3,(long)&o,(long)&n,0,0));
  printf("migrate maxnode0 %ld\n", sc(SYS_migrate_pages,0,0,(long)&o,(long)&n,0,0));
  printf("migrate nopid %ld\n", sc(SYS_migrate_pages,999999,2,(long)&o,(long)&n,0,0));
  printf("migrate bad mask %ld\n", sc(SYS_migrate_pages,0,2,8,(long)&n,0,0));
  printf("migrate huge maxnode %ld\n", sc(SYS_migrate_pages,0,1<<20,(long)&o,(long)&n,0,0));
  unsigned long mask = 1;
  printf("set_mempolicy maxnode 0 %ld\n", sc(SYS_set_mempolicy,0,(long)&mask,0,0,0,0));
  printf("set_mempolicy maxnode 0 no mask %ld\n", sc(SYS_set_mempolicy,0,0,0,0,0,0));
  printf("numa page moves: done\n");
  return 0;
}
