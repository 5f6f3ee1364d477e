ANSWERS = {"hello": "hello"}
