/*
 * main.c - spore-step, the reference step CLI (agent-step.md §9; see
 * step.h): arguments, signals, the stdout takeover, the request, runDir,
 * then the provider.
 *
 * usage: spore-step --provider fake --scenario <file>
 *
 * Must never write to the real stdout except through the protocol writer,
 * or exit 0 without a result line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "step/step.h"

#ifndef SPORE_VERSION
#define SPORE_VERSION "0.0.0"
#endif

static const char USAGE[] =
    "usage: spore-step [--provider <name>] [--scenario <file>]\n"
    "\n"
    "The reference step CLI of spore's agent steps: reads one JSON request on\n"
    "stdin, writes protocol records on stdout, logs on stderr (agent-step.md).\n"
    "Providers: fake (plays --scenario), openai (Chat Completions: OpenAI, Ollama,\n"
    "vLLM, llama.cpp, LM Studio, LiteLLM, OpenRouter), anthropic (Messages); the\n"
    "provider, model and endpoint come from $SPORE_AGENT_CONFIG, which the agent\n"
    "runner writes from the action (see docs/agents.md).\n"
    "Exit: 0 result, 1 internal error, 2 request invalid, 3 precondition failed,\n"
    "4 result only in result.json, 128+N killed by signal N.\n";

static void on_signal(int sig) { _exit(128 + sig); }

static int precondition(const char *fmt, const char *arg)
{
    fprintf(stderr, "spore-step: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return STEP_EXIT_PRECONDITION;
}

/* runDir: created 0700; an existing one must be a real directory of ours. */
static int make_run_dir(const char *dir)
{
    if (mkdir(dir, 0700) == 0)
        return 0;
    if (errno != EEXIST)
        return precondition("runDir cannot be made: %s", strerror(errno));
    struct stat st;
    if (lstat(dir, &st) || S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
        return precondition("runDir %s exists and is not a directory of this user (symlinks "
                            "are refused)", "");
    return 0;
}

int main(int argc, char **argv)
{
    const char *provider = NULL, *scenario = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stderr);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            fprintf(stderr, "spore-step %s\n", SPORE_VERSION);
            return 0;
        }
        if (strcmp(argv[i], "--provider") == 0 && i + 1 < argc)
            provider = argv[++i];
        else if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc)
            scenario = argv[++i];
        else
            return precondition("unknown argument %s (see --help)", argv[i]);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout is an error code, not a death */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "spore-step: libcurl cannot be initialised\n");
        return STEP_EXIT_INTERNAL;
    }

    /* stdout is the protocol: keep it private, send stray prints to stderr */
    int proto = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (proto < 0 || dup2(2, 1) < 0) {
        fprintf(stderr, "spore-step: cannot take over stdout\n");
        return STEP_EXIT_INTERNAL;
    }
    step_request req;
    int rc = step_read_request(&req);
    if (rc)
        return rc;
    step_config config;
    if ((rc = step_config_load(&config, provider)) || (rc = make_run_dir(req.run_dir))) {
        step_config_free(&config);
        step_request_free(&req);
        return rc;
    }
    const step_provider *p = step_provider_find(config.provider);
    step_out out = {proto, req.step_id, 0};
    if (!config.provider[0])
        rc = precondition("no provider: give --provider or the action's \"provider\"%s", "");
    else if (!p)
        rc = precondition("provider \"%s\" is not available (fake, openai, anthropic)",
                          config.provider);
    else
        rc = p->run(p, &req, &config, scenario, &out);
    step_config_free(&config);
    step_request_free(&req);
    return rc;
}
