/*
 * test_digest.c - the pinned digest and identity vectors of kernel.md §7.3
 * and conformance/VECTORS.md §2-3.
 */
#include <string.h>

#include "check.h"
#include "digest/digest.h"

static void hash_of(const char *tag, const char *const *parts, size_t n, char *out)
{
    sp_part p[4];
    for (size_t i = 0; i < n; i++)
        p[i] = (sp_part){parts[i], strlen(parts[i])};
    sp_hash_text(tag, p, n, out);
}

static void test_framing_vectors(void)
{
    char d[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("body", "{}", 2, d);
    CHECK_STR(d, "sha256:7f6fcb6872012cddbdbf6a1f895f1b687a70de28298b97d4a42961bb171fab45");
    sp_digest_one("body", "null", 4, d);
    CHECK_STR(d, "sha256:ebb01f5521e6649f4fe9caac75d4ab1a92ffead7bc7d55a0ae556d9d7a6c91e0");
    const char *ab_c[] = {"ab", "c"}, *a_bc[] = {"a", "bc"}, *abc[] = {"abc"},
               *abc_empty[] = {"abc", ""}, *x[] = {"x"};
    hash_of("t", ab_c, 2, d);
    CHECK_STR(d, "sha256:061be47831b8bffe1a0554b255d145f468bdc081619e36d1d69b3322c235c445");
    hash_of("t", a_bc, 2, d);
    CHECK_STR(d, "sha256:61c3f64872cb3a6140bc8bd4b2152315b03c2ef335ef25b35f31cd549806a0af");
    hash_of("t", abc, 1, d);
    CHECK_STR(d, "sha256:daf6958372020c05ea683addc2ff86caf4a32ac6632681fb4071df53c9f19832");
    hash_of("t", abc_empty, 2, d);
    CHECK_STR(d, "sha256:4a392e2d9b61a117af2356eab3ddfde0037b1959ca6d651ee66aa993072471af");
    hash_of("a", x, 1, d);
    CHECK_STR(d, "sha256:476d881b5adc16f4f031ebf27a79722e574819b2e78b30141782625a1930386d");
    hash_of("b", x, 1, d);
    CHECK_STR(d, "sha256:efe5e01c3d5347f2cadae502d37c45a1bba026bbbe302ef1298d7e2c3f22649d");
}

static void test_incremental_equals_one_shot(void)
{
    char a[SP_DIGEST_TEXT_LEN + 1], b[SP_DIGEST_TEXT_LEN + 1];
    sp_hasher h;
    sp_hasher_begin(&h, "t");
    sp_hasher_part(&h, "ab", 2);
    sp_hasher_part(&h, "c", 1);
    sp_hasher_end_text(&h, a);
    const char *parts[] = {"ab", "c"};
    hash_of("t", parts, 2, b);
    CHECK_STR(a, b);
}

static void test_identities(void)
{
    char id[SP_ID_LEN + 1], again[SP_ID_LEN + 1];
    sp_invocation_id("default", "run_1", "build/1", id);
    CHECK_STR(id, "inv_57ad3ddadf5146a10373a1b0c22b5dad");
    sp_invocation_id("default", "run_1", "build/1", again);
    CHECK_STR(again, id);
    CHECK_INT(strlen(id), 36);
    sp_invocation_id("default", "run_1", "build/2", id);
    CHECK_STR(id, "inv_06348af4627951327004fc8e55fb96a5");
    sp_invocation_id("default", "run_2", "build/1", id);
    CHECK_STR(id, "inv_1ed78a590e6dcaa0d9d8ac3e1779dc1f");
    sp_command_id("default", "run_1", "build/1", 1, id);
    CHECK_STR(id, "cmd_664a235de63a6f80adda2fd4a7f67da8");
    sp_command_id("default", "run_1", "build/1", 2, id);
    CHECK_STR(id, "cmd_fd0d6cc2df3e39de8f758bc4d7b9a820");
    sp_run_id_from_start_key("default", "hello-1", id);
    CHECK_STR(id, "run_1ed55d2b7e22541f12a4d93233ea1f12");
    sp_run_id_from_start_key("default", "hello-2", id);
    CHECK_STR(id, "run_02dba8c4bbfa7115e5ac84527ad928f4");
    sp_run_id_from_start_key("default", "review-1", id);
    CHECK_STR(id, "run_698d808071a554a19eaf1cc0c578af57");
    sp_run_id_from_start_key("default", "deploy-1", id);
    CHECK_STR(id, "run_d3f771834c9dca1abe857c4307ef9b6c");
    sp_invocation_id("default", "run_02dba8c4bbfa7115e5ac84527ad928f4", "greet/1", id);
    CHECK_STR(id, "inv_8a54ca10ce093bcba43fef226ef14aea");
    sp_invocation_id("default", "run_d3f771834c9dca1abe857c4307ef9b6c", "deploy/1", id);
    CHECK_STR(id, "inv_365cb523af61e7de1ded53399d6ee056");
}

int main(void)
{
    test_framing_vectors();
    test_incremental_equals_one_shot();
    test_identities();
    return check_done("test_digest");
}
