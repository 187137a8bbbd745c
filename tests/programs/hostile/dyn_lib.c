/* A small shared library for the dynamic-linking tests: built as libdynlib.so (the answer 42)
 * and, with -DPRELOAD, as a preload library whose constructor sets the answer it overrides with
 * (7), so the program's output shows both that the override won and that the constructor ran.
 * dyn_announce.c is the library that prints. */

#ifdef PRELOAD
static int answer;

__attribute__((constructor)) static void set_answer(void)
{
    answer = 7;
}

int dyn_answer(void)
{
    return answer;
}
#else
int dyn_answer(void)
{
    return 42;
}
#endif
