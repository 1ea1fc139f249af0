"""`compiled_by_xla` tells the ops which compiler traces them."""

import tensorflow as tf

from keras_capsules.ops.compilation import compiled_by_xla


class CompiledByXlaTest(tf.test.TestCase):
    def test_true_only_while_xla_traces(self):
        seen = {}

        def record(name):
            def function(x):
                seen[name] = compiled_by_xla()
                return x

            return function

        tf.function(record("xla"), jit_compile=True)(tf.ones(1))
        tf.function(record("graph"))(tf.ones(1))
        record("eager")(tf.ones(1))
        self.assertEqual(seen, {"xla": True, "graph": False, "eager": False})


if __name__ == "__main__":
    tf.test.main()
